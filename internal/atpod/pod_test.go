package atpod_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

const (
	defaultImage = "busybox:1.37"
	atName       = "hello"
	atNamespace  = "jobs"
	atUID        = types.UID("7f3c1a52-0d4e-4b8e-9a43-2c1f5e6d7a80")
)

// scheduled is 09:00 in UTC+1, that is 08:00 UTC.
var scheduled = time.Date(2026, 11, 21, 9, 0, 0, 0, time.FixedZone("UTC+1", 3600))

var defaultOpts = atpod.PodOptions{DefaultImage: defaultImage}

// newAt returns an At named hello in namespace jobs with the given command
// and template (either may be empty).
func newAt(command string, template *corev1.PodTemplateSpec) *cnatv1beta1.At {
	return &cnatv1beta1.At{
		TypeMeta: metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      atName,
			Namespace: atNamespace,
			UID:       atUID,
		},
		Spec: cnatv1beta1.AtSpec{
			Schedule: "2026-11-21T09:00:00+01:00",
			Command:  command,
			Template: template,
		},
	}
}

// withActiveDeadline sets spec.activeDeadlineSeconds.
func withActiveDeadline(at *cnatv1beta1.At, seconds int64) *cnatv1beta1.At {
	at.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
	return at
}

func podTemplate(spec corev1.PodSpec) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: spec}
}

// restrictedContainer is the security context every container gets when the
// template sets none.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// restrictedDefaultImageContainer is the security context of the container
// that runs the default image when the template sets none.
func restrictedDefaultImageContainer() *corev1.SecurityContext {
	sc := restrictedContainer()
	sc.RunAsUser = ptr.To[int64](65534)
	return sc
}

func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func TestPodName(t *testing.T) {
	longName := strings.Repeat("a", 63)
	tests := []struct {
		at      string
		uid     types.UID
		attempt int32
		want    string
	}{
		{at: "hello", uid: atUID, attempt: 1, want: "hello-7f3c1a52-1"},
		{at: "hello", uid: atUID, attempt: 12, want: "hello-7f3c1a52-12"},
		{at: "hello", uid: "0b9d4e11-5a6f-4c3e-8d2b-1e0f9a8b7c6d", attempt: 1, want: "hello-0b9d4e11-1"},
		{at: "backup-db", uid: atUID, attempt: 100, want: "backup-db-7f3c1a52-100"},
		{at: longName, uid: atUID, attempt: 101, want: longName + "-7f3c1a52-101"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			g := NewWithT(t)
			at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: tc.at, UID: tc.uid}}
			for range 3 { // the same on every call
				got := atpod.PodName(at, tc.attempt)
				g.Expect(got).To(Equal(tc.want))
				g.Expect(len(got)).To(BeNumerically("<=", 253), "longer than a Pod name may be")
			}
		})
	}
}

// commandPod is the whole Pod of newAt("echo hello world", nil), attempt 1,
// scheduled at 09:00 UTC+1, with defaultOpts: what the API server receives,
// field for field. Each case of TestNewPod changes only what it expects
// differently.
func commandPod(edits ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       "hello-7f3c1a52-1",
			Namespace:  atNamespace,
			Finalizers: []string{"cnat.programming-kubernetes.info/tracking"},
			Labels: map[string]string{
				"cnat.programming-kubernetes.info/at":      atName,
				"cnat.programming-kubernetes.info/at-uid":  string(atUID),
				"cnat.programming-kubernetes.info/attempt": "1",
				"app.kubernetes.io/managed-by":             "cnat",
			},
			Annotations: map[string]string{
				"cnat.programming-kubernetes.info/scheduled-time":  "2026-11-21T08:00:00Z",
				"cnat.programming-kubernetes.info/spec-generation": "0",
				"cnat.programming-kubernetes.info/spec-hash":       "9ab827e4d8f2c428",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "cnat.programming-kubernetes.info/v1beta1",
				Kind:               "At",
				Name:               atName,
				UID:                atUID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "command",
				Image:           defaultImage,
				Command:         []string{"/bin/sh", "-c", "echo hello world"},
				SecurityContext: restrictedDefaultImageContainer(),
			}},
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext:              restrictedPod(),
		},
	}
	for _, edit := range edits {
		edit(pod)
	}
	return pod
}

// attempt expects the Pod of attempt n, scheduled at scheduledUTC.
func attempt(n int32, scheduledUTC string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		pod.Name = fmt.Sprintf("hello-7f3c1a52-%d", n)
		pod.Labels[cnatv1beta1.LabelAttempt] = fmt.Sprint(n)
		pod.Annotations[cnatv1beta1.AnnotationScheduledTime] = scheduledUTC
	}
}

// specOf expects the At's spec hash and generation.
func specOf(hash string, generation int) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		pod.Annotations[cnatv1beta1.AnnotationSpecHash] = hash
		pod.Annotations[cnatv1beta1.AnnotationSpecGeneration] = fmt.Sprint(generation)
	}
}

// TestNewPod checks whole Pods, field for field.
func TestNewPod(t *testing.T) {
	templated := newAt("", &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ignored", Namespace: "elsewhere", Finalizers: []string{"example.com/ignored"},
			Labels:      map[string]string{"team": "payments"},
			Annotations: map[string]string{"example.com/owner": "payments@example.com"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "reporter",
			InitContainers:     []corev1.Container{{Name: "fetch", Image: "curlimages/curl:8.10.1"}},
			Containers:         []corev1.Container{{Name: "report", Image: "ghcr.io/example/report:2.1", Args: []string{"--all"}}},
		},
	})
	templated.Generation = 4
	tests := []struct {
		name      string
		at        *cnatv1beta1.At
		attempt   int32
		scheduled time.Time
		opts      atpod.PodOptions
		want      *corev1.Pod
	}{
		{
			name: "first attempt", at: newAt("echo hello world", nil), attempt: 1, scheduled: scheduled, opts: defaultOpts,
			want: commandPod(),
		},
		{
			name: "third attempt", at: newAt("echo hello world", nil), attempt: 3, scheduled: scheduled.Add(2 * time.Hour), opts: defaultOpts,
			want: commandPod(attempt(3, "2026-11-21T10:00:00Z")),
		},
		{
			name: "a deadline and a pull policy", at: withActiveDeadline(newAt("echo hello world", nil), 60), attempt: 1, scheduled: scheduled,
			opts: atpod.PodOptions{DefaultImage: defaultImage, ImagePullPolicy: corev1.PullNever},
			want: commandPod(specOf("1a0f16f9b8094926", 0), func(pod *corev1.Pod) {
				pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
				pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
			}),
		},
		{
			name: "a template: only its labels and annotations are taken of its metadata", at: templated, attempt: 1, scheduled: scheduled, opts: defaultOpts,
			want: commandPod(specOf("09f24b0af9db3667", 4), func(pod *corev1.Pod) {
				pod.Labels["team"] = "payments"
				pod.Annotations["example.com/owner"] = "payments@example.com"
				pod.Spec.ServiceAccountName = "reporter"
				pod.Spec.AutomountServiceAccountToken = nil
				pod.Spec.InitContainers = []corev1.Container{{Name: "fetch", Image: "curlimages/curl:8.10.1", SecurityContext: restrictedContainer()}}
				pod.Spec.Containers = []corev1.Container{{Name: "report", Image: "ghcr.io/example/report:2.1", Args: []string{"--all"}, SecurityContext: restrictedContainer()}}
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(atpod.NewPod(tc.at, tc.attempt, tc.scheduled, tc.opts)).To(BeComparableTo(tc.want))
		})
	}
}

// TestNewPodDropsCnatKeysOfTheTemplate: of a template's labels and
// annotations, none under cnat's prefix reaches the Pod (admission refuses
// them; an At stored before that must not claim, release or mislabel its
// Pod), and cnat's own are what the controller sets.
func TestNewPodDropsCnatKeysOfTheTemplate(t *testing.T) {
	g := NewWithT(t)
	at := newAt("", &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				"team": "payments", cnatv1beta1.LabelReleased: "true", cnatv1beta1.LabelAt: "someone-else",
				cnatv1beta1.LabelAttempt: "7", cnatv1beta1.KeyPrefix + "anything": "x",
			},
			Annotations: map[string]string{
				"example.com/owner": "payments", cnatv1beta1.AnnotationSpecHash: "forged",
				cnatv1beta1.KeyPrefix + "anything": "x",
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}}},
	})
	pod := atpod.NewPod(at, 1, scheduled, defaultOpts)
	g.Expect(pod.Labels).To(Equal(map[string]string{
		"team":                         "payments",
		cnatv1beta1.LabelAt:            atName,
		cnatv1beta1.LabelAtUID:         string(atUID),
		cnatv1beta1.LabelAttempt:       "1",
		"app.kubernetes.io/managed-by": "cnat",
	}))
	g.Expect(pod.Annotations).To(Equal(map[string]string{
		"example.com/owner":                  "payments",
		cnatv1beta1.AnnotationScheduledTime:  "2026-11-21T08:00:00Z",
		cnatv1beta1.AnnotationSpecGeneration: "0",
		cnatv1beta1.AnnotationSpecHash:       atpod.SpecHash(at),
	}))
}

// TestNewPodScheduledTime checks that the scheduled-time annotation is an
// RFC 3339 time in UTC denoting the scheduled instant.
func TestNewPodScheduledTime(t *testing.T) {
	g := NewWithT(t)
	tests := []struct {
		name      string
		scheduled time.Time
	}{
		{name: "UTC", scheduled: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)},
		{name: "offset", scheduled: scheduled},
		{name: "named zone", scheduled: time.Date(2026, 3, 29, 3, 30, 0, 0, mustLoadLocation(g, "Europe/Berlin"))},
		{name: "sub-second", scheduled: time.Date(2026, 11, 21, 9, 0, 0, 500_000_000, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pod := atpod.NewPod(newAt("date", nil), 1, tc.scheduled, defaultOpts)
			value := pod.Annotations[cnatv1beta1.AnnotationScheduledTime]
			parsed, err := time.Parse(time.RFC3339, value)
			g.Expect(err).NotTo(HaveOccurred(), "annotation %q is not RFC 3339", value)
			type instant struct {
				Time string
				Zone string
			}
			name, _ := parsed.Zone()
			g.Expect(instant{Time: parsed.Format(time.RFC3339Nano), Zone: name}).To(BeComparableTo(
				instant{Time: tc.scheduled.UTC().Format(time.RFC3339Nano), Zone: "UTC"}), "annotation %q", value)
		})
	}
}

func mustLoadLocation(g Gomega, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return loc
}

// securityContexts is what the Pod says about security: the Pod's and each
// container's security context.
type securityContexts struct {
	Pod            *corev1.PodSecurityContext
	InitContainers []*corev1.SecurityContext
	Containers     []*corev1.SecurityContext
}

func securityOf(pod *corev1.Pod) securityContexts {
	s := securityContexts{Pod: pod.Spec.SecurityContext}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, c.SecurityContext)
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, c.SecurityContext)
	}
	return s
}

func TestNewPodRestrictedSecurityDefaults(t *testing.T) {
	tests := []struct {
		name string
		at   *cnatv1beta1.At
		want securityContexts
	}{
		{
			name: "command only: restricted, default image runs as nobody",
			at:   newAt("id", nil),
			want: securityContexts{
				Pod:        restrictedPod(),
				Containers: []*corev1.SecurityContext{restrictedDefaultImageContainer()},
			},
		},
		{
			name: "template container with the default image written in (by the defaulting webhook): runs as nobody",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: defaultImage}},
			})),
			want: securityContexts{
				Pod:        restrictedPod(),
				Containers: []*corev1.SecurityContext{restrictedDefaultImageContainer()},
			},
		},
		{
			name: "template image container and init container: restricted, no runAsUser",
			at: newAt("id", podTemplate(corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "fetch", Image: "curlimages/curl:8.10.1"}},
				Containers:     []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			want: securityContexts{
				Pod:            restrictedPod(),
				InitContainers: []*corev1.SecurityContext{restrictedContainer()},
				Containers:     []*corev1.SecurityContext{restrictedContainer()},
			},
		},
		{
			name: "template container without image runs the default image as nobody",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main"}},
			})),
			want: securityContexts{
				Pod:        restrictedPod(),
				Containers: []*corev1.SecurityContext{restrictedDefaultImageContainer()},
			},
		},
		{
			name: "pod-level runAsUser is kept and the default image container gets no runAsUser",
			at: newAt("id", podTemplate(corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			})),
			want: securityContexts{
				Pod: &corev1.PodSecurityContext{
					RunAsUser:      ptr.To[int64](1000),
					RunAsNonRoot:   ptr.To(true),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []*corev1.SecurityContext{restrictedContainer()},
			},
		},
		{
			name: "container-level runAsUser on the default image container is kept",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:            "main",
					SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](4242)},
				}},
			})),
			want: securityContexts{
				Pod: restrictedPod(),
				Containers: []*corev1.SecurityContext{{
					RunAsUser:                ptr.To[int64](4242),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}},
			},
		},
		{
			name: "pod-level seccomp Unconfined and runAsNonRoot false are kept",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot:   ptr.To(false),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				},
			})),
			want: securityContexts{
				Pod: &corev1.PodSecurityContext{
					RunAsNonRoot:   ptr.To(false),
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				},
				Containers: []*corev1.SecurityContext{restrictedContainer()},
			},
		},
		{
			name: "container allowPrivilegeEscalation true and drop ALL with add NET_BIND_SERVICE are kept",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:  "web",
					Image: "nginx:1.27",
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(true),
						Capabilities: &corev1.Capabilities{
							Add:  []corev1.Capability{"NET_BIND_SERVICE"},
							Drop: []corev1.Capability{"ALL"},
						},
					},
				}},
			})),
			want: securityContexts{
				Pod: restrictedPod(),
				Containers: []*corev1.SecurityContext{{
					AllowPrivilegeEscalation: ptr.To(true),
					Capabilities: &corev1.Capabilities{
						Add:  []corev1.Capability{"NET_BIND_SERVICE"},
						Drop: []corev1.Capability{"ALL"},
					},
				}},
			},
		},
		{
			// The restricted standard allows adding NET_BIND_SERVICE but
			// requires dropping ALL; the template decided only what to add,
			// so the drop it left unset gets the restricted value.
			name: "capabilities add NET_BIND_SERVICE is kept and drop ALL is filled in",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:  "web",
					Image: "nginx:1.27",
					SecurityContext: &corev1.SecurityContext{
						Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}},
					},
				}},
			})),
			want: securityContexts{
				Pod: restrictedPod(),
				Containers: []*corev1.SecurityContext{{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{
						Add:  []corev1.Capability{"NET_BIND_SERVICE"},
						Drop: []corev1.Capability{"ALL"},
					},
				}},
			},
		},
		{
			name: "container-level seccomp Unconfined is kept",
			at: newAt("id", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:  "main",
					Image: "alpine:3.20",
					SecurityContext: &corev1.SecurityContext{
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
					},
				}},
			})),
			want: securityContexts{
				Pod: restrictedPod(),
				Containers: []*corev1.SecurityContext{{
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}},
			},
		},
		{
			name: "every container of a multi-container template is restricted",
			at: newAt("", podTemplate(corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Name: "init-a", Image: "alpine:3.20"},
					{Name: "sidecar", Image: "envoy:1.31", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)},
				},
				Containers: []corev1.Container{
					{Name: "main", Image: "alpine:3.20"},
					{Name: "helper", Image: "alpine:3.20"},
				},
			})),
			want: securityContexts{
				Pod:            restrictedPod(),
				InitContainers: []*corev1.SecurityContext{restrictedContainer(), restrictedContainer()},
				Containers:     []*corev1.SecurityContext{restrictedContainer(), restrictedContainer()},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(securityOf(atpod.NewPod(tc.at, 1, scheduled, defaultOpts))).To(BeComparableTo(tc.want))
		})
	}
}

// containerRun is what one of the Pod's containers runs.
type containerRun struct {
	Name    string
	Image   string
	Command []string
	Args    []string
}

func runsOf(cs []corev1.Container) []containerRun {
	var runs []containerRun
	for _, c := range cs {
		runs = append(runs, containerRun{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args})
	}
	return runs
}

func TestNewPodTemplate(t *testing.T) {
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	env := []corev1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"},
			Key:                  "token",
		}}},
	}
	volumes := []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"},
		}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/tmp"},
		{Name: "config", MountPath: "/etc/app", ReadOnly: true},
	}

	type passThrough struct {
		Image              string
		Env                []corev1.EnvVar
		Resources          corev1.ResourceRequirements
		ServiceAccountName string
		Volumes            []corev1.Volume
		VolumeMounts       []corev1.VolumeMount
		NodeSelector       map[string]string
	}
	type metadata struct {
		Labels      map[string]string
		Annotations map[string]string
	}
	type lifecycle struct {
		RestartPolicy         corev1.RestartPolicy
		ActiveDeadlineSeconds *int64
	}
	type pullPolicies struct {
		InitContainers []corev1.PullPolicy
		Containers     []corev1.PullPolicy
	}
	pullPoliciesOf := func(pod *corev1.Pod) any {
		var p pullPolicies
		for _, c := range pod.Spec.InitContainers {
			p.InitContainers = append(p.InitContainers, c.ImagePullPolicy)
		}
		for _, c := range pod.Spec.Containers {
			p.Containers = append(p.Containers, c.ImagePullPolicy)
		}
		return p
	}

	tests := []struct {
		name string
		at   *cnatv1beta1.At
		opts atpod.PodOptions
		// view picks out of the Pod what the case is about.
		view func(*corev1.Pod) any
		want any
	}{
		{
			name: "image, env, resources, serviceAccountName, volumes pass through",
			at: newAt("./report.sh", podTemplate(corev1.PodSpec{
				ServiceAccountName: "reporter",
				NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
				Volumes:            volumes,
				Containers: []corev1.Container{{
					Name:         "report",
					Image:        "ghcr.io/example/report:2.1",
					Env:          env,
					Resources:    resources,
					VolumeMounts: mounts,
				}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				c := pod.Spec.Containers[0]
				return passThrough{
					Image:              c.Image,
					Env:                c.Env,
					Resources:          c.Resources,
					ServiceAccountName: pod.Spec.ServiceAccountName,
					Volumes:            pod.Spec.Volumes,
					VolumeMounts:       c.VolumeMounts,
					NodeSelector:       pod.Spec.NodeSelector,
				}
			},
			want: passThrough{
				Image:              "ghcr.io/example/report:2.1",
				Env:                env,
				Resources:          resources,
				ServiceAccountName: "reporter",
				Volumes:            volumes,
				VolumeMounts:       mounts,
				NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			},
		},
		{
			name: "template labels and annotations pass through, cnat's labels win",
			at: newAt("date", &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{
						"team":                                "payments",
						"cnat.programming-kubernetes.info/at": "someone-else",
						"cnat.programming-kubernetes.info/at-uid":  "0b9d4e11-5a6f-4c3e-8d2b-1e0f9a8b7c6d",
						"cnat.programming-kubernetes.info/attempt": "99",
						"app.kubernetes.io/managed-by":             "helm",
					},
					Annotations: map[string]string{
						"example.com/owner": "payments@example.com",
						"cnat.programming-kubernetes.info/scheduled-time": "1999-12-31T23:59:59Z",
					},
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}}},
			}),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return metadata{Labels: pod.Labels, Annotations: pod.Annotations} },
			want: metadata{
				Labels: map[string]string{
					"team":                                "payments",
					"cnat.programming-kubernetes.info/at": atName,
					"cnat.programming-kubernetes.info/at-uid":  string(atUID),
					"cnat.programming-kubernetes.info/attempt": "1",
					"app.kubernetes.io/managed-by":             "cnat",
				},
				Annotations: map[string]string{
					"example.com/owner": "payments@example.com",
					"cnat.programming-kubernetes.info/scheduled-time":  "2026-11-21T08:00:00Z",
					"cnat.programming-kubernetes.info/spec-generation": "0",
					"cnat.programming-kubernetes.info/spec-hash":       "70dc0cde27a732fe",
				},
			},
		},
		{
			name: "spec.command replaces the first container's command and args",
			at: newAt("python -m report --all", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "main", Image: "python:3.13", Command: []string{"python"}, Args: []string{"main.py", "--once"}},
					{Name: "sidecar", Image: "envoy:1.31", Command: []string{"envoy"}, Args: []string{"-c", "/etc/envoy.yaml"}},
				},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return runsOf(pod.Spec.Containers) },
			want: []containerRun{
				{Name: "main", Image: "python:3.13", Command: []string{"/bin/sh", "-c", "python -m report --all"}},
				{Name: "sidecar", Image: "envoy:1.31", Command: []string{"envoy"}, Args: []string{"-c", "/etc/envoy.yaml"}},
			},
		},
		{
			name: "spec.command replaces args even when the template sets only args",
			at: newAt("date", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20", Args: []string{"--verbose"}}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return runsOf(pod.Spec.Containers) },
			want: []containerRun{
				{Name: "main", Image: "alpine:3.20", Command: []string{"/bin/sh", "-c", "date"}},
			},
		},
		{
			name: "without spec.command the template's command and args are kept",
			at: newAt("", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "python:3.13", Command: []string{"python"}, Args: []string{"main.py"}}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return runsOf(pod.Spec.Containers) },
			want: []containerRun{
				{Name: "main", Image: "python:3.13", Command: []string{"python"}, Args: []string{"main.py"}},
			},
		},
		{
			name: "template container without image runs the default image",
			at: newAt("date", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{{Name: "TZ", Value: "UTC"}}}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return runsOf(pod.Spec.Containers) },
			want: []containerRun{
				{Name: "main", Image: defaultImage, Command: []string{"/bin/sh", "-c", "date"}},
			},
		},
		{
			name: "template with metadata only gets the command container",
			at: newAt("date", &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "payments"}},
			}),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return runsOf(pod.Spec.Containers) },
			want: []containerRun{
				{Name: "command", Image: defaultImage, Command: []string{"/bin/sh", "-c", "date"}},
			},
		},
		{
			name: "restartPolicy Always becomes Never",
			at: newAt("date", podTemplate(corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Containers:    []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return lifecycle{RestartPolicy: pod.Spec.RestartPolicy, ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds}
			},
			want: lifecycle{RestartPolicy: corev1.RestartPolicyNever},
		},
		{
			name: "restartPolicy OnFailure becomes Never",
			at: newAt("date", podTemplate(corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return lifecycle{RestartPolicy: pod.Spec.RestartPolicy, ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds}
			},
			want: lifecycle{RestartPolicy: corev1.RestartPolicyNever},
		},
		{
			name: "a native sidecar keeps its container restartPolicy Always",
			at: newAt("date", podTemplate(corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "envoy:1.31", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}},
				Containers:     []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return []any{pod.Spec.RestartPolicy, pod.Spec.InitContainers[0].RestartPolicy}
			},
			want: []any{corev1.RestartPolicyNever, ptr.To(corev1.ContainerRestartPolicyAlways)},
		},
		{
			name: "activeDeadlineSeconds comes from spec.activeDeadlineSeconds without a template",
			at:   withActiveDeadline(newAt("sleep 30", nil), 120),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return lifecycle{RestartPolicy: pod.Spec.RestartPolicy, ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds}
			},
			want: lifecycle{RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: ptr.To[int64](120)},
		},
		{
			name: "spec.activeDeadlineSeconds overrides the template's",
			at: withActiveDeadline(newAt("sleep 30", podTemplate(corev1.PodSpec{
				ActiveDeadlineSeconds: ptr.To[int64](30),
				Containers:            []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})), 600),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return lifecycle{RestartPolicy: pod.Spec.RestartPolicy, ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds}
			},
			want: lifecycle{RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: ptr.To[int64](600)},
		},
		{
			name: "no spec.activeDeadlineSeconds: no deadline",
			at:   newAt("sleep 30", nil),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return lifecycle{RestartPolicy: pod.Spec.RestartPolicy, ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds}
			},
			want: lifecycle{RestartPolicy: corev1.RestartPolicyNever},
		},
		{
			name: "a template with serviceAccountName keeps automountServiceAccountToken unset",
			at: newAt("kubectl get pods", podTemplate(corev1.PodSpec{
				ServiceAccountName: "pod-reader",
				Containers:         []corev1.Container{{Name: "main", Image: "bitnami/kubectl:1.33"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return pod.Spec.AutomountServiceAccountToken },
			want: (*bool)(nil),
		},
		{
			name: "a template without serviceAccountName gets automountServiceAccountToken false",
			at: newAt("date", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return pod.Spec.AutomountServiceAccountToken },
			want: ptr.To(false),
		},
		{
			name: "a template's own automountServiceAccountToken is kept",
			at: newAt("date", podTemplate(corev1.PodSpec{
				AutomountServiceAccountToken: ptr.To(true),
				Containers:                   []corev1.Container{{Name: "main", Image: "alpine:3.20"}},
			})),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any { return pod.Spec.AutomountServiceAccountToken },
			want: ptr.To(true),
		},
		{
			name: "ImagePullPolicy option applies only to containers that set none",
			at: newAt("date", podTemplate(corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Name: "init-unset", Image: "alpine:3.20"},
					{Name: "init-never", Image: "alpine:3.20", ImagePullPolicy: corev1.PullNever},
				},
				Containers: []corev1.Container{
					{Name: "main-always", Image: "alpine:3.20", ImagePullPolicy: corev1.PullAlways},
					{Name: "helper-unset", Image: "alpine:3.20"},
				},
			})),
			opts: atpod.PodOptions{DefaultImage: defaultImage, ImagePullPolicy: corev1.PullIfNotPresent},
			view: pullPoliciesOf,
			want: pullPolicies{
				InitContainers: []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullNever},
				Containers:     []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent},
			},
		},
		{
			name: "ImagePullPolicy option applies to the command container",
			at:   newAt("date", nil),
			opts: atpod.PodOptions{DefaultImage: defaultImage, ImagePullPolicy: corev1.PullNever},
			view: pullPoliciesOf,
			want: pullPolicies{Containers: []corev1.PullPolicy{corev1.PullNever}},
		},
		{
			name: "without the ImagePullPolicy option pull policies stay unset",
			at: newAt("date", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "main", Image: "alpine:3.20"},
					{Name: "helper", Image: "alpine:3.20", ImagePullPolicy: corev1.PullAlways},
				},
			})),
			opts: defaultOpts,
			view: pullPoliciesOf,
			want: pullPolicies{Containers: []corev1.PullPolicy{"", corev1.PullAlways}},
		},
		{
			name: "the Pod is in the At's namespace and owned by it",
			at: newAt("date", &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Name: "ignored", Namespace: "elsewhere"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}}},
			}),
			opts: defaultOpts,
			view: func(pod *corev1.Pod) any {
				return []any{pod.Name, pod.Namespace, pod.OwnerReferences}
			},
			want: []any{"hello-7f3c1a52-1", atNamespace, []metav1.OwnerReference{{
				APIVersion:         "cnat.programming-kubernetes.info/v1beta1",
				Kind:               "At",
				Name:               atName,
				UID:                atUID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.view(atpod.NewPod(tc.at, 1, scheduled, tc.opts))).To(BeComparableTo(tc.want))
		})
	}
}

// TestNewPodLeavesAtAlone checks that NewPod does not modify the At it is
// given (it comes from the informer cache, shared by everyone), neither
// while rendering nor through the returned Pod.
func TestNewPodLeavesAtAlone(t *testing.T) {
	tests := []struct {
		name string
		at   *cnatv1beta1.At
	}{
		{name: "command only", at: withActiveDeadline(newAt("echo hello", nil), 60)},
		{
			name: "template with everything NewPod fills in or overrides",
			at: withActiveDeadline(newAt("date", &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"team": "payments", cnatv1beta1.LabelAt: "x"},
					Annotations: map[string]string{"example.com/owner": "payments"},
				},
				Spec: corev1.PodSpec{
					RestartPolicy:         corev1.RestartPolicyAlways,
					ActiveDeadlineSeconds: ptr.To[int64](5),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{{Name: "init", Image: "alpine:3.20"}},
					Containers: []corev1.Container{
						{Name: "main", Command: []string{"python"}, Args: []string{"main.py"}, Env: []corev1.EnvVar{{Name: "X", Value: "1"}}},
						{Name: "helper", Image: "alpine:3.20", SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						}},
					},
				},
			}), 60),
		},
		{
			name: "template without labels, command or security settings",
			at: newAt("", podTemplate(corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20", Command: []string{"date"}}},
			})),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := tc.at.DeepCopy()
			pod := atpod.NewPod(tc.at, 2, scheduled, atpod.PodOptions{DefaultImage: defaultImage, ImagePullPolicy: corev1.PullIfNotPresent})
			g.Expect(tc.at).To(BeComparableTo(before), "NewPod modified the At")

			// Scribble over everything the Pod holds that came from the At.
			for k := range pod.Labels {
				pod.Labels[k] = "scribbled"
			}
			for k := range pod.Annotations {
				pod.Annotations[k] = "scribbled"
			}
			if pod.Spec.ActiveDeadlineSeconds != nil {
				*pod.Spec.ActiveDeadlineSeconds = 1
			}
			*pod.Spec.SecurityContext.RunAsNonRoot = false
			pod.Spec.SecurityContext.SeccompProfile.Type = "scribbled"
			for i := range pod.Spec.InitContainers {
				pod.Spec.InitContainers[i].Name = "scribbled"
			}
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				for j := range c.Command {
					c.Command[j] = "scribbled"
				}
				for j := range c.Args {
					c.Args[j] = "scribbled"
				}
				for j := range c.Env {
					c.Env[j].Value = "scribbled"
				}
				c.SecurityContext.RunAsUser = ptr.To[int64](1)
				*c.SecurityContext.AllowPrivilegeEscalation = true
				c.SecurityContext.Capabilities.Drop[0] = "scribbled"
			}
			g.Expect(tc.at).To(BeComparableTo(before), "changing the rendered Pod changed the At")
		})
	}
}

// TestNewPodDeterministic checks that rendering the same attempt twice
// gives the same Pod: the Pod a second replica or a retried reconcile
// would create is the one that exists, and Ats of one template share a
// dry-run verdict.
func TestNewPodDeterministic(t *testing.T) {
	at := withActiveDeadline(newAt("date", &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "1", "b": "2", "c": "3"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}},
		},
	}), 60)
	g := NewWithT(t)
	first := atpod.NewPod(at, 1, scheduled, defaultOpts)
	g.Expect(atpod.NewPod(at, 1, scheduled, defaultOpts)).To(BeComparableTo(first), "a second rendering")
}
