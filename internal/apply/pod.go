package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// CommandContainerName is the container that runs spec.command when the At
// has no template.
const CommandContainerName = "command"

// nobody is the user the default image's container runs as: the restricted
// Pod Security Standard requires a non-root user, and busybox-style images
// run as root unless told otherwise.
const nobody int64 = 65534

// PodOptions are the controller's settings for the Pods it renders.
type PodOptions struct {
	// DefaultImage runs spec.command when the At has no template, or when the
	// template's first container has no image. It must provide /bin/sh.
	DefaultImage string
	// ImagePullPolicy, when set, is used for containers that do not set one.
	ImagePullPolicy corev1.PullPolicy
}

// uidPrefixLength is how much of the At's UID goes into its Pods' names: 8
// hex digits tell incarnations of one name apart while keeping names short
// (the whole UID is in the LabelAtUID label, and the controller owner
// reference is what the controller trusts).
const uidPrefixLength = 8

// PodName is the name of the Pod of attempt (1-based) of at:
// <at>-<first 8 characters of the At's UID>-<attempt>. It is the same on
// every call, so a controller that crashed after creating an attempt's Pod,
// or a second replica, finds that Pod instead of creating another; and it
// differs between incarnations of an At (deleted and created again under the
// same name), so a new At never meets the Pods of an old one. With a name of
// at most 63 characters it stays far below the 253 a Pod name may have.
func PodName(at *cnatv1beta1.At, attempt int32) string {
	uid := string(at.UID)
	if len(uid) > uidPrefixLength {
		uid = uid[:uidPrefixLength]
	}
	return at.Name + "-" + uid + "-" + strconv.Itoa(int(attempt))
}

// RenderPod returns the Pod that runs attempt (1-based) of at, as an apply
// configuration: the template (if any) with restartPolicy Never, the
// command in its first container, the restricted Pod Security defaults for
// whatever security settings the template leaves unset, a controller owner
// reference to the At so that the Pod goes when the At goes, the labels
// that name the At, its UID and the attempt, and the tracking finalizer.
func RenderPod(at *cnatv1beta1.At, attempt int32, scheduled time.Time, opts PodOptions) (*corev1ac.PodApplyConfiguration, error) {
	spec, err := podSpecFrom(at.Spec.Template)
	if err != nil {
		return nil, err
	}
	if len(spec.Containers) == 0 {
		spec.WithContainers(corev1ac.Container().WithName(CommandContainerName))
	}
	first := &spec.Containers[0]
	if first.Image == nil || *first.Image == "" {
		first.WithImage(opts.DefaultImage)
	}
	// The default image, whether filled in here or by the defaulting
	// webhook, runs as root unless told otherwise.
	usesDefaultImage := *first.Image == opts.DefaultImage
	if at.Spec.Command != "" {
		first.Command = []string{"/bin/sh", "-c", at.Spec.Command}
		first.Args = nil
	}
	spec.WithRestartPolicy(corev1.RestartPolicyNever)
	if at.Spec.ActiveDeadlineSeconds != nil {
		spec.WithActiveDeadlineSeconds(*at.Spec.ActiveDeadlineSeconds)
	}
	if spec.AutomountServiceAccountToken == nil && (spec.ServiceAccountName == nil || *spec.ServiceAccountName == "") {
		// A command that did not ask for an identity gets none.
		spec.WithAutomountServiceAccountToken(false)
	}
	applyRestrictedDefaults(spec, usesDefaultImage)
	for i := range spec.InitContainers {
		defaultPullPolicy(&spec.InitContainers[i], opts.ImagePullPolicy)
	}
	for i := range spec.Containers {
		defaultPullPolicy(&spec.Containers[i], opts.ImagePullPolicy)
	}

	pod := corev1ac.Pod(PodName(at, attempt), at.Namespace).
		WithSpec(spec).
		WithFinalizers(cnatv1beta1.TrackingFinalizer).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(cnatv1beta1.GroupVersion.String()).
			WithKind("At").
			WithName(at.Name).
			WithUID(at.UID).
			WithController(true).
			WithBlockOwnerDeletion(true))
	if at.Spec.Template != nil {
		pod.WithLabels(at.Spec.Template.Labels).WithAnnotations(at.Spec.Template.Annotations)
	}
	// cnat's own labels come last: a template cannot take them over.
	pod.WithLabels(map[string]string{
		cnatv1beta1.LabelAt:            at.Name,
		cnatv1beta1.LabelAtUID:         string(at.UID),
		cnatv1beta1.LabelAttempt:       strconv.Itoa(int(attempt)),
		"app.kubernetes.io/managed-by": "cnat",
	})
	pod.WithAnnotations(map[string]string{
		cnatv1beta1.AnnotationScheduledTime:  scheduled.UTC().Format(time.RFC3339Nano),
		cnatv1beta1.AnnotationSpecGeneration: strconv.FormatInt(at.Generation, 10),
		cnatv1beta1.AnnotationSpecHash:       SpecHash(at),
	})
	return pod, nil
}

// SpecHash is a digest of what an At's Pod runs: spec.command,
// spec.template and spec.activeDeadlineSeconds. A Pod carries the digest of
// the spec it was made from, so that the At can tell when the spec it shows
// is not the one its Pod runs.
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

// podSpecFrom turns the template's PodSpec into an apply configuration.
// Apply configurations are the JSON form of the API types, so the JSON
// encoding is the faithful conversion, field for field.
func podSpecFrom(template *corev1.PodTemplateSpec) (*corev1ac.PodSpecApplyConfiguration, error) {
	spec := corev1ac.PodSpec()
	if template == nil {
		return spec, nil
	}
	raw, err := json.Marshal(template.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding spec.template.spec: %w", err)
	}
	if err := json.Unmarshal(raw, spec); err != nil {
		return nil, fmt.Errorf("decoding spec.template.spec: %w", err)
	}
	return spec, nil
}

// applyRestrictedDefaults fills in what the restricted Pod Security Standard
// asks for wherever the template did not decide: non-root, the runtime's
// default seccomp profile, no privilege escalation, no capabilities.
func applyRestrictedDefaults(spec *corev1ac.PodSpecApplyConfiguration, firstUsesDefaultImage bool) {
	if spec.SecurityContext == nil {
		spec.WithSecurityContext(corev1ac.PodSecurityContext())
	}
	psc := spec.SecurityContext
	if psc.RunAsNonRoot == nil {
		psc.WithRunAsNonRoot(true)
	}
	if psc.SeccompProfile == nil {
		psc.WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	}
	containers := make([]*corev1ac.ContainerApplyConfiguration, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		containers = append(containers, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		containers = append(containers, &spec.Containers[i])
	}
	for _, c := range containers {
		if c.SecurityContext == nil {
			c.WithSecurityContext(corev1ac.SecurityContext())
		}
		sc := c.SecurityContext
		if sc.AllowPrivilegeEscalation == nil {
			sc.WithAllowPrivilegeEscalation(false)
		}
		if sc.Capabilities == nil {
			sc.WithCapabilities(corev1ac.Capabilities())
		}
		if len(sc.Capabilities.Drop) == 0 {
			// Restricted allows adding back NET_BIND_SERVICE, never keeping
			// the rest: a template that only adds still drops ALL.
			sc.Capabilities.WithDrop(corev1.Capability("ALL"))
		}
	}
	if firstUsesDefaultImage && psc.RunAsUser == nil && spec.Containers[0].SecurityContext.RunAsUser == nil {
		spec.Containers[0].SecurityContext.WithRunAsUser(nobody)
	}
}

func defaultPullPolicy(c *corev1ac.ContainerApplyConfiguration, policy corev1.PullPolicy) {
	if policy != "" && c.ImagePullPolicy == nil {
		c.WithImagePullPolicy(policy)
	}
}

// NewPod is RenderPod as the corev1.Pod a create request sends. Apply
// configurations are the JSON form of the API types, so the JSON encoding
// converts one into the other field for field.
func NewPod(at *cnatv1beta1.At, attempt int32, scheduled time.Time, opts PodOptions) (*corev1.Pod, error) {
	ac, err := RenderPod(at, attempt, scheduled, opts)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("encoding the Pod: %w", err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, fmt.Errorf("decoding the Pod: %w", err)
	}
	return pod, nil
}
