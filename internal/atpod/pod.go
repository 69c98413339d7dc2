package atpod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// CommandContainerName is the container that runs spec.command when the At
// has no template.
const CommandContainerName = "command"

// nobody is the default image's user: restricted Pod Security requires non-root.
const nobody int64 = 65534

// PodOptions are the controller's settings for the Pods it renders.
type PodOptions struct {
	// DefaultImage runs spec.command (or a container without an image); it
	// must provide /bin/sh.
	DefaultImage string
	// ImagePullPolicy, when set, is used for containers that do not set one.
	ImagePullPolicy corev1.PullPolicy
}

// uidPrefixLength is how much of the At's UID its Pods' names carry: enough
// to tell incarnations apart (the whole UID is a label).
const uidPrefixLength = 8

// PodName is the name of the Pod of attempt (1-based) of at,
// <at>-<uid8>-<attempt>: fixed per attempt (the basis of at-most-once) and
// different for every incarnation of the At's name.
func PodName(at *cnatv1beta1.At, attempt int32) string {
	uid := string(at.UID)
	if len(uid) > uidPrefixLength {
		uid = uid[:uidPrefixLength]
	}
	return at.Name + "-" + uid + "-" + strconv.Itoa(int(attempt))
}

// NewPod returns the Pod that runs attempt (1-based) of at, as the controller
// creates it and the webhook's dry run sends it (docs/architecture.md, "The
// Pod of an At"); it shares no memory with the cached at.
func NewPod(at *cnatv1beta1.At, attempt int32, scheduled time.Time, opts PodOptions) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       PodName(at, attempt),
			Namespace:  at.Namespace,
			Finalizers: []string{cnatv1beta1.TrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         cnatv1beta1.GroupVersion.String(),
				Kind:               "At",
				Name:               at.Name,
				UID:                at.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
			Labels:      map[string]string{},
			Annotations: map[string]string{},
		},
	}
	if at.Spec.Template != nil {
		at.Spec.Template.Spec.DeepCopyInto(&pod.Spec)
		copyNotCnats(pod.Labels, at.Spec.Template.Labels)
		copyNotCnats(pod.Annotations, at.Spec.Template.Annotations)
	}
	maps.Copy(pod.Labels, map[string]string{
		cnatv1beta1.LabelAt:            at.Name,
		cnatv1beta1.LabelAtUID:         string(at.UID),
		cnatv1beta1.LabelAttempt:       strconv.Itoa(int(attempt)),
		"app.kubernetes.io/managed-by": "cnat",
	})
	maps.Copy(pod.Annotations, map[string]string{
		cnatv1beta1.AnnotationScheduledTime:  scheduled.UTC().Format(time.RFC3339Nano),
		cnatv1beta1.AnnotationSpecGeneration: strconv.FormatInt(at.Generation, 10),
		cnatv1beta1.AnnotationSpecHash:       SpecHash(at),
	})

	spec := &pod.Spec
	if len(spec.Containers) == 0 {
		spec.Containers = []corev1.Container{{Name: CommandContainerName}}
	}
	first := &spec.Containers[0]
	if first.Image == "" {
		first.Image = opts.DefaultImage
	}
	// The default image runs as root unless told otherwise.
	usesDefaultImage := first.Image == opts.DefaultImage
	if at.Spec.Command != "" {
		first.Command = []string{"/bin/sh", "-c", at.Spec.Command}
		first.Args = nil
	}
	spec.RestartPolicy = corev1.RestartPolicyNever
	if at.Spec.ActiveDeadlineSeconds != nil {
		spec.ActiveDeadlineSeconds = ptr.To(*at.Spec.ActiveDeadlineSeconds)
	}
	if spec.AutomountServiceAccountToken == nil && spec.ServiceAccountName == "" {
		// A command that did not ask for an identity gets none.
		spec.AutomountServiceAccountToken = ptr.To(false)
	}
	fillRestrictedDefaults(spec, usesDefaultImage)
	for _, c := range containersOf(spec) {
		if opts.ImagePullPolicy != "" && c.ImagePullPolicy == "" {
			c.ImagePullPolicy = opts.ImagePullPolicy
		}
	}
	return pod
}

// copyNotCnats copies into dst the keys of src not under KeyPrefix: an At
// stored before admission refused them must not claim or release a Pod.
func copyNotCnats(dst, src map[string]string) {
	for k, v := range src {
		if !strings.HasPrefix(k, cnatv1beta1.KeyPrefix) {
			dst[k] = v
		}
	}
}

// SpecHash is a digest of what an At's Pod runs (command, template, active
// deadline), which the Pod carries so the At can tell when its spec is not
// the one its Pod runs.
func SpecHash(at *cnatv1beta1.At) string {
	raw, err := json.Marshal(struct {
		Command               string                  `json:"command"`
		Template              *corev1.PodTemplateSpec `json:"template"`
		ActiveDeadlineSeconds *int64                  `json:"activeDeadlineSeconds"`
	}{at.Spec.Command, at.Spec.Template, at.Spec.ActiveDeadlineSeconds})
	if err != nil {
		// A PodTemplateSpec always encodes; an empty digest compares unequal
		// to nothing (see lifecycle), so it cannot raise a false alarm.
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// fillRestrictedDefaults fills in restricted Pod Security's settings wherever
// the template did not decide.
func fillRestrictedDefaults(spec *corev1.PodSpec, firstUsesDefaultImage bool) {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := spec.SecurityContext
	if psc.RunAsNonRoot == nil {
		psc.RunAsNonRoot = ptr.To(true)
	}
	if psc.SeccompProfile == nil {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	for _, c := range containersOf(spec) {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		sc := c.SecurityContext
		if sc.AllowPrivilegeEscalation == nil {
			sc.AllowPrivilegeEscalation = ptr.To(false)
		}
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		if len(sc.Capabilities.Drop) == 0 {
			// Restricted allows adding back NET_BIND_SERVICE, never keeping
			// the rest: a template that only adds still drops ALL.
			sc.Capabilities.Drop = []corev1.Capability{"ALL"}
		}
	}
	if firstUsesDefaultImage && psc.RunAsUser == nil && spec.Containers[0].SecurityContext.RunAsUser == nil {
		spec.Containers[0].SecurityContext.RunAsUser = ptr.To(nobody)
	}
}

// containersOf is every container of spec, init containers first.
func containersOf(spec *corev1.PodSpec) []*corev1.Container {
	containers := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	return containers
}
