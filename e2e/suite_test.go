//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/yaml"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Annotations with which the local cluster's simulated kubelet imitates a
// command (hack/kwok/stages.yaml). A real kubelet ignores them and runs the
// command.
const (
	simulateExitCode = "simulate.cnat.programming-kubernetes.info/exit-code"
	simulateDuration = "simulate.cnat.programming-kubernetes.info/duration"
)

var (
	scheme     = runtime.NewScheme()
	restConfig *rest.Config
	// admin acts with the kubeconfig's identity (a cluster administrator).
	admin client.Client
)

func TestMain(m *testing.M) {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cnatv1beta1.AddToScheme, cnatv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	var err error
	if restConfig, err = config.GetConfig(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: no cluster (set KUBECONFIG): %v\n", err)
		os.Exit(1)
	}
	if admin, err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testNamespace creates a namespace that enforces the restricted Pod
// Security level, as a careful platform team would, and removes it after
// the test. When the test failed, it first prints what a user would look
// at: the Ats, their Pods, the Events, the controller's log.
func testNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-",
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}
	NewWithT(t).Expect(admin.Create(context.Background(), ns)).To(Succeed())
	t.Cleanup(func() {
		if t.Failed() {
			dump(t, ns.Name)
		}
		_ = admin.Delete(context.Background(), ns)
	})
	return ns.Name
}

func dump(t *testing.T, namespace string) {
	ctx := context.Background()
	var ats cnatv1beta1.AtList
	if err := admin.List(ctx, &ats, client.InNamespace(namespace)); err == nil {
		for i := range ats.Items {
			ats.Items[i].ManagedFields = nil
			out, _ := yaml.Marshal(&ats.Items[i])
			t.Logf("At %s:\n%s", ats.Items[i].Name, out)
		}
	}
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			t.Logf("Pod %s: phase %s, %s", p.Name, p.Status.Phase, p.Status.Message)
		}
	}
	var events eventsv1.EventList
	if err := admin.List(ctx, &events, client.InNamespace(namespace)); err == nil {
		for _, e := range events.Items {
			t.Logf("Event %s/%s: %s %s: %s", e.Regarding.Kind, e.Regarding.Name, e.Type, e.Reason, e.Note)
		}
	}
	if path := os.Getenv("CNAT_E2E_CONTROLLER_LOG"); path != "" {
		if data, err := os.ReadFile(path); err == nil {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			t.Logf("controller log (last 40 lines of %s):\n%s", path, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}
}

// runs returns an At that runs script in a Pod and, on the simulated
// kubelet, ends with exitCode after duration.
func runs(namespace, name, schedule, script string, exitCode int, duration time.Duration) *cnatv1beta1.At {
	return &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: cnatv1beta1.AtSpec{
			Schedule: schedule,
			Command:  script,
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					simulateExitCode: fmt.Sprint(exitCode),
					simulateDuration: duration.String(),
				}},
				Spec: onTestNodes(corev1.PodSpec{
					Containers: []corev1.Container{{Name: "command"}},
					// sh as PID 1 ignores SIGTERM: a deleted Pod would wait out
					// the default 30 s before it is killed.
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				}),
			},
		},
	}
}

// The labels of the local cluster's nodes (hack/lib/nodes.sh): the real
// node, where a Pod without placement of its own runs, and the simulated
// (kwok) nodes, tainted with simulatedKey where the real node runs.
const (
	realNodeKey  = "cnat.programming-kubernetes.info/real-node"
	simulatedKey = "cnat.programming-kubernetes.info/simulated"
)

// testNodes is CNAT_E2E_NODES: "simulated" (make e2e) sends the Pods of the
// Ats that imitate a command with annotations to the simulated nodes, where
// those annotations are the exit code and duration; "real" (make e2e-real)
// leaves placement to the cluster, whose default is the real node, and
// checks the Pods ran there; "kind" (make e2e-kind) leaves placement to the
// cluster and checks the Pods ran on its worker. Each make target sets it;
// unset, a test that checks placement fails, rather than check nothing.
func testNodes() string { return os.Getenv("CNAT_E2E_NODES") }

// onTestNodes gives the Pod of an At that imitates its command the
// placement of testNodes.
func onTestNodes(spec corev1.PodSpec) corev1.PodSpec {
	if testNodes() != "simulated" {
		return spec
	}
	spec.NodeSelector = map[string]string{simulatedKey: "true"}
	spec.Tolerations = []corev1.Toleration{{Key: simulatedKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return spec
}

// expectOnTestNodes checks that the Pod ran where testNodes says: on a
// simulated node if the At asked for them (placed), on the real node for
// every At under make e2e-real.
func expectOnTestNodes(g Gomega, pod corev1.Pod, placed bool) {
	var want string
	node := &corev1.Node{}
	switch {
	case testNodes() == "real":
		want = realNodeKey
	case testNodes() == "simulated" && placed:
		want = simulatedKey
	case testNodes() == "simulated":
		return // placement left to the cluster: the real node if it runs, else a simulated one
	case testNodes() == "kind":
		g.Expect(admin.Get(context.Background(), client.ObjectKey{Name: pod.Spec.NodeName}, node)).To(Succeed(), "the node of Pod %s", pod.Name)
		g.Expect(node.Labels).NotTo(HaveKey("node-role.kubernetes.io/control-plane"), "Pod %s ran on kind's worker, not on %s", pod.Name, node.Name)
		return
	default:
		g.Expect(testNodes()).To(BeElementOf("simulated", "real", "kind"), "CNAT_E2E_NODES says where the Pods must run")
	}
	g.Expect(admin.Get(context.Background(), client.ObjectKey{Name: pod.Spec.NodeName}, node)).To(Succeed(), "the node of Pod %s", pod.Name)
	g.Expect(node.Labels).To(HaveKeyWithValue(want, "true"), "Pod %s ran on node %s", pod.Name, node.Name)
}

// in formats the instant d from now as a schedule.
func in(d time.Duration) string {
	return time.Now().Add(d).UTC().Format(time.RFC3339)
}

// get reads an At.
func get(g Gomega, namespace, name string) *cnatv1beta1.At {
	at := &cnatv1beta1.At{}
	g.Expect(admin.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, at)).To(Succeed())
	return at
}

// phaseOf is a poll function for Eventually.
func phaseOf(namespace, name string) func(Gomega) cnatv1beta1.Phase {
	return func(g Gomega) cnatv1beta1.Phase { return get(g, namespace, name).Status.Phase }
}

// podsOf lists an At's Pods.
func podsOf(g Gomega, namespace, name string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(admin.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{cnatv1beta1.LabelAt: name})).To(Succeed())
	return pods.Items
}

// eventReasons lists the reasons of the Events on an At.
func eventReasons(g Gomega, namespace, name string) []string {
	var events eventsv1.EventList
	g.Expect(admin.List(context.Background(), &events, client.InNamespace(namespace))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "At" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
