package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// refuseLabel on an At's Pod template says which block refuses its Pod
// first in the policy scenario: "webhook" (the webhook that is down), else
// the ValidatingAdmissionPolicy.
const refuseLabel = "chaos.cnat.programming-kubernetes.info/refuse"

// blockLead is how much later than usual the Ats of policy and quota fire:
// the refusals are put in place once the Ats exist, and must be in force
// before their time.
const blockLead = 3 * time.Second

// refusalFireTime is when the Ats of policy and quota fire: time for n Ats
// to pass admission (each a dry-run Pod create; after the janitor scenario
// 200 of them once took longer than fireTime allows), then blockLead.
func refusalFireTime(n int) time.Time {
	return fireTime(n).Add(time.Duration(n)*40*time.Millisecond + blockLead)
}

// refused is the usual At of a refusal scenario: it runs for 2 s, every
// fourth fails with exit code 3 (no retry: the refusal is what is
// attacked), two in ten have a starting deadline of 10 s, which the refusal
// outlasts: those must end Missed.
func refused(at time.Time) func(int) trial.AtSpec {
	return func(i int) trial.AtSpec {
		s := trial.AtSpec{At: at, Command: "echo chaos", Duration: "2s"}
		if i%4 == 3 {
			s.ExitCode = 3
		}
		if i%10 == 4 || i%10 == 5 {
			s.Deadline, s.Expect = 10, string(cnatv1beta1.PhaseMissed)
		}
		return s
	}
}

// probePod is a Pod anyone may make in the scenario's namespace, with the
// given labels, to ask the API server (dry run) whether it admits Pods now.
func (r *run) probePod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "chaos-probe", Labels: labels},
		Spec:       cluster.SimulatedPodSpec("command"),
	}
}

// awaitAdmission creates a probe Pod with the labels as c's user, dry run,
// until ok accepts the API server's answer (nil: admitted), for at most a
// minute, and says how long that took.
func (r *run) awaitAdmission(ctx context.Context, c client.Client, labels map[string]string, what string, ok func(error) bool) (time.Duration, error) {
	start := time.Now()
	// Asked with ctx: an answer cut short by the timeout is no answer.
	var answer error
	err := poll.Until(ctx, 100*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		answer = c.Create(ctx, r.probePod(labels), client.DryRunAll)
		return ok(answer), nil
	}, func() error {
		if answer == nil {
			return fmt.Errorf("%s: not after a minute; the API server admits Pods", what)
		}
		return fmt.Errorf("%s: not after a minute; the API server's answer to a Pod: %w", what, answer)
	})
	return time.Since(start), err
}

// refusedBy returns a check that a Pod create was refused with the given
// HTTP code and a message containing substr.
func refusedBy(code int32, substr string) func(error) bool {
	return func(err error) bool {
		var status apierrors.APIStatus
		if err == nil || !errors.As(err, &status) {
			return false
		}
		return status.Status().Code == code && strings.Contains(err.Error(), substr)
	}
}

func admitted(err error) bool { return err == nil }

// closedPort is a local TCP port nothing listens on.
func closedPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// cleanup deletes objects the scenario made outside its namespace, also when
// it failed half way.
func (r *run) cleanup(objs ...client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, obj := range objs {
		if err := r.h.cl.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			fmt.Printf("chaos %s: deleting %T %s: %v\n", r.name, obj, obj.GetName(), err)
		}
	}
}

// policy: Ats due together whose Pods are refused by admission from before
// their time until the size's refusal window after it (25 s; 15 s small): a
// ValidatingAdmissionPolicy answers 422 Invalid for half of them, and a Pod
// webhook that is down (a closed port, failurePolicy Fail) answers 500 for
// the other half until half the window, when the policy takes them over. Every At must say why
// it has no Pod at its time (no silent), be retried once the policy is
// lifted, and end as its Pods say; those with a deadline shorter than the
// window end Missed.
func (h *harness) policy(ctx context.Context, r *run) error {
	stop := r.Sample(ctx, 2*time.Second)
	defer stop()

	name := "chaos-refuse-" + r.Namespace
	viaPolicy := map[string]string{refuseLabel: "policy"}
	viaWebhook := map[string]string{refuseLabel: "webhook"}
	nsSelector := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: r.Namespace}}
	podCreates := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: nsSelector,
				ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: podCreates[0]}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "false",
				Message:    "chaos policy: no Pods in this namespace for a while",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			// The webhook's half first; the policy takes it over later.
			MatchResources: &admissionregistrationv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: refuseLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"webhook"},
				}}},
			},
		},
	}
	port, err := closedPort()
	if err != nil {
		return err
	}
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "refuse.chaos.cnat.programming-kubernetes.info",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d/refuse", port))},
			Rules:                   podCreates,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](2),
			NamespaceSelector:       nsSelector,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{refuseLabel: "webhook"}},
		}},
	}
	// The Ats first: cnat's admission webhook tries each At's Pod by a dry
	// run, and refuses an At whose Pod the API server could not even try
	// (a Pod webhook that is down).
	at := refusalFireTime(h.size.ats)
	spec := func(i int) trial.AtSpec {
		s := refused(at)(i)
		s.Labels = viaPolicy
		if i%2 == 1 {
			s.Labels = viaWebhook
		}
		return s
	}
	if err := r.createMany(ctx, "p", h.size.ats, spec); err != nil {
		return err
	}
	defer r.cleanup(webhook, binding, vap)
	for _, obj := range []client.Object{vap, binding, webhook} {
		if err := h.cl.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, name, err)
		}
	}
	byPolicy := refusedBy(422, "ValidatingAdmissionPolicy '"+name+"'")
	byWebhook := refusedBy(500, "failed calling webhook")
	took, err := r.awaitAdmission(ctx, h.cl.Client, viaPolicy, "the policy refusing Pods", byPolicy)
	if err != nil {
		return err
	}
	tookWebhook, err := r.awaitAdmission(ctx, h.cl.Client, viaWebhook, "the webhook refusing Pods", byWebhook)
	if err != nil {
		return err
	}
	fmt.Printf("chaos policy: the policy refuses Pods (422) after %s, the webhook (500) after %s more, %s before the Ats' time\n",
		took.Round(100*time.Millisecond), tookWebhook.Round(100*time.Millisecond), time.Until(at).Round(100*time.Millisecond))
	if time.Now().After(at) {
		return errors.New("the refusals were not in force before the Ats' time: the scenario proves nothing")
	}

	// Half the window: the policy refuses every Pod, then the webhook goes.
	if err := sleepUntil(ctx, at.Add(h.size.refusal/2)); err != nil {
		return err
	}
	if err := h.cl.Client.Get(ctx, client.ObjectKeyFromObject(binding), binding); err != nil {
		return err
	}
	binding.Spec.MatchResources = nil
	if err := h.cl.Client.Update(ctx, binding); err != nil {
		return fmt.Errorf("widening the policy's binding: %w", err)
	}
	if _, err := r.awaitAdmission(ctx, h.cl.Client, viaWebhook, "the policy refusing the webhook's Pods", byPolicy); err != nil {
		return err
	}
	if err := h.cl.Client.Delete(ctx, webhook); err != nil {
		return fmt.Errorf("deleting the webhook: %w", err)
	}
	fmt.Printf("chaos policy: %s after the Ats' time the policy refuses every Pod; the webhook is gone\n", time.Since(at).Round(100*time.Millisecond))

	if err := sleepUntil(ctx, at.Add(h.size.refusal)); err != nil {
		return err
	}
	if err := h.cl.Client.Delete(ctx, binding); err != nil {
		return fmt.Errorf("deleting the policy's binding: %w", err)
	}
	if err := h.cl.Client.Delete(ctx, vap); err != nil {
		return fmt.Errorf("deleting the policy: %w", err)
	}
	for _, labels := range []map[string]string{viaPolicy, viaWebhook} {
		if _, err := r.awaitAdmission(ctx, h.cl.Client, labels, "Pods admitted again", admitted); err != nil {
			return err
		}
	}
	fmt.Printf("chaos policy: Pods admitted again %s after the Ats' time\n", time.Since(at).Round(100*time.Millisecond))
	return r.settle(ctx)
}

// quota: Ats due together in a namespace whose ResourceQuota allows no Pods
// (403 Forbidden, exceeded quota) until the size's refusal window after
// their time, when
// it is raised. The verdicts are those of policy.
func (h *harness) quota(ctx context.Context, r *run) error {
	stop := r.Sample(ctx, 2*time.Second)
	defer stop()

	at := refusalFireTime(h.size.ats)
	if err := r.createMany(ctx, "q", h.size.ats, refused(at)); err != nil {
		return err
	}
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "chaos-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if err := h.cl.Client.Create(ctx, quota); err != nil {
		return fmt.Errorf("creating the ResourceQuota: %w", err)
	}
	// The quota controller (kube-controller-manager) fills in its status;
	// until then the API server refuses for another reason.
	took, err := r.awaitAdmission(ctx, h.cl.Client, nil, "the quota refusing Pods", refusedBy(403, "exceeded quota: chaos-pods"))
	if err != nil {
		return err
	}
	fmt.Printf("chaos quota: the ResourceQuota pods: 0 refuses Pods (403) after %s, %s before the Ats' time\n",
		took.Round(100*time.Millisecond), time.Until(at).Round(100*time.Millisecond))
	if time.Now().After(at) {
		return errors.New("the quota was not in force before the Ats' time: the scenario proves nothing")
	}
	if err := sleepUntil(ctx, at.Add(h.size.refusal)); err != nil {
		return err
	}
	if err := h.cl.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota); err != nil {
		return err
	}
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("10000")
	if err := h.cl.Client.Update(ctx, quota); err != nil {
		return fmt.Errorf("raising the ResourceQuota: %w", err)
	}
	if _, err := r.awaitAdmission(ctx, h.cl.Client, nil, "Pods admitted again", admitted); err != nil {
		return err
	}
	fmt.Printf("chaos quota: raised; Pods admitted again %s after the Ats' time\n", time.Since(at).Round(100*time.Millisecond))
	return r.settle(ctx)
}
