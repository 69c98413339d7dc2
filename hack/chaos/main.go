// Command chaos attacks cnat's two promises on the local cluster — a
// command runs at most once per attempt its At may make, and an At says
// truthfully how its own run went — and judges the outcome from the API
// server's side: the kube-apiserver audit log (every Pod create and Pod
// status write) and the objects the API server holds at the end, never the
// controller's own word (package judge).
//
// It runs the controller on the host, as its ServiceAccount (the kubeconfig
// hack/chaos.sh writes), behind a TCP proxy on localhost:9443, where the
// local overlay registers the webhooks, so that two replicas can run side by
// side and the webhook can be taken down while the controller keeps running.
// The At Pods run on the simulated nodes (nodeSelector and toleration
// cnat.programming-kubernetes.info/simulated), where hack/kwok/stages.yaml
// plays the kubelet.
//
// Each scenario runs in a namespace of its own, left for inspection, and
// prints, after its findings, the lines
//
//	chaos <name>: ats=N pods=P duplicates=D lost=L silent=S falseSucceeded=F
//	chaos <name>: terminating=T breaches=B wrong=W
//
// T are its Pods left Terminating by cnat's tracking finalizer, B the
// attacks the API server should have refused that got through (spoof,
// cotenant), W the cotenant scenario's own checks that failed. The command
// exits 1 if any scenario has one of these above 0, or if the judge does not
// see the duplicate Pod the selfcheck scenario makes by hand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// config holds the command line.
type config struct {
	kubeconfig           string
	controllerKubeconfig string
	controllerBinary     string
	prefetch             time.Duration
	workDir              string
	clusterDir           string
	auditLog             string
	size                 string
	scenarios            string
	ats                  int
	kills                int
	seed                 uint64
}

// size is how hard each scenario attacks.
type size struct {
	// ats is the number of Ats per scenario.
	ats int
	// kills is how often the controller is SIGKILLed in sigkill and janitor.
	kills int
	// leaderKills and leaderStops are the rounds of the leader scenario in
	// which the leader is SIGKILLed, and SIGSTOPped past its lease.
	leaderKills, leaderStops int
	// restarts is how often etcd and kube-apiserver are restarted.
	restarts int
	// outage is how long the webhook refuses, and then hangs.
	outage time.Duration
	// settle is how long the Ats have, after the last attack, to be
	// terminal.
	settle time.Duration
	// refusal is how long after the Ats' time their Pods are refused in
	// policy and quota: longer than their starting deadline (10 s), and
	// long enough for the controller to try each At more than once.
	refusal time.Duration
}

var sizes = map[string]size{
	"default": {ats: 200, kills: 12, leaderKills: 2, leaderStops: 1, restarts: 2, outage: 8 * time.Second, settle: 3 * time.Minute, refusal: 25 * time.Second},
	"small":   {ats: 20, kills: 3, leaderKills: 1, leaderStops: 1, restarts: 1, outage: 3 * time.Second, settle: 90 * time.Second, refusal: 15 * time.Second},
}

// scenario is one attack: its body runs once replica 0 is started, or for
// leader both replicas, electing a leader, and the replicas are stopped after
// it.
type scenario struct {
	name   string
	body   func(*harness, context.Context, *run) error
	leader bool
}

// scenarios in the order they run.
var scenarios = []scenario{
	{"selfcheck", (*harness).selfcheck, false},
	{"sigkill", (*harness).sigkill, false},
	{"leader", (*harness).leader, true},
	{"apiserver", (*harness).apiserver, false},
	{"webhook", (*harness).webhook, false},
	{"recreate", (*harness).recreate, false},
	{"poddelete", (*harness).podDelete, false},
	{"janitor", (*harness).janitor, false},
	{"policy", (*harness).policy, false},
	{"quota", (*harness).quota, false},
	{"drain", (*harness).drain, false},
	{"spoof", (*harness).spoof, false},
	{"cotenant", (*harness).cotenant, false},
	{"uninstall", (*harness).uninstall, false},
}

// scenarioNames are the scenarios' names, in the order they run, joined
// by sep.
func scenarioNames(sep string) string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return strings.Join(names, sep)
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", ".local/kubeconfig", "The cluster administrator's kubeconfig: the harness creates Ats and plays the attacker with it.")
	flag.StringVar(&cfg.controllerKubeconfig, "controller-kubeconfig", ".local/chaos/controller.kubeconfig", "Kubeconfig of the controller's ServiceAccount, with which the controller runs.")
	flag.StringVar(&cfg.controllerBinary, "controller", "bin/cnat-controller", "The controller binary.")
	flag.DurationVar(&cfg.prefetch, "prefetch", 2*time.Second, "The controller's --prefetch: short, so that most Ats, due seconds after they are created, are kept compact, woken and read whole under every attack (0: the controller's default; for a binary without the flag).")
	flag.StringVar(&cfg.workDir, "work-dir", ".local/chaos", "Where the controllers' logs, certificates and the findings go.")
	flag.StringVar(&cfg.clusterDir, "cluster-dir", ".local/kwok/clusters/cnat", "The kwokctl directory of the local cluster (its components, logs and PIDs).")
	flag.StringVar(&cfg.auditLog, "audit-log", "", "The kube-apiserver audit log (default: logs/audit.log in -cluster-dir).")
	flag.StringVar(&cfg.size, "size", "default", "How hard to attack: default (200 Ats, 12 kills...) or small (for make test).")
	flag.StringVar(&cfg.scenarios, "scenarios", scenarioNames(","), "Comma-separated scenarios to run, of: "+scenarioNames(", ")+".")
	flag.IntVar(&cfg.ats, "ats", 0, "Ats per scenario, instead of the size's.")
	flag.IntVar(&cfg.kills, "kills", 0, "SIGKILLs of the controller in sigkill and janitor, instead of the size's.")
	flag.Uint64Var(&cfg.seed, "seed", 0, "Seed of the random pauses between attacks (0: from the clock; printed).")
	flag.Parse()
	// controller-runtime's clients log nothing the harness needs.
	ctrllog.SetLogger(logr.Discard())
	if cfg.auditLog == "" {
		cfg.auditLog = filepath.Join(cfg.clusterDir, "logs", "audit.log")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	failed, err := chaos(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// harness is the state shared by the scenarios.
type harness struct {
	cfg  config
	size size
	rand *rand.Rand
	// cl are the administrator's clients, from which the spoof scenario
	// makes an impersonating client.
	cl       *cluster.Clients
	replicas []*replica
	proxy    *webhookProxy
	// nodes are the simulated nodes' names, sorted.
	nodes []string
	// scenario is the one running, for log names.
	scenario string
}

func chaos(ctx context.Context, cfg config) (failed bool, err error) {
	sz, ok := sizes[cfg.size]
	if !ok {
		return false, fmt.Errorf("-size: %q is not one of default, small", cfg.size)
	}
	if cfg.ats < 0 || cfg.kills < 0 {
		return false, errors.New("-ats and -kills must not be negative")
	}
	if cfg.ats > 0 {
		sz.ats = cfg.ats
	}
	if cfg.kills > 0 {
		sz.kills = cfg.kills
	}
	var selected []scenario
	for _, name := range strings.Split(cfg.scenarios, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(scenarios, func(s scenario) bool { return s.name == name })
		if i < 0 {
			return false, fmt.Errorf("-scenarios: %q is not one of %s", name, scenarioNames(", "))
		}
		selected = append(selected, scenarios[i])
	}
	if i := slices.IndexFunc(selected, func(s scenario) bool { return s.name == "uninstall" }); i >= 0 && i != len(selected)-1 {
		return false, errors.New("-scenarios: uninstall removes cnat from the cluster: it must come last")
	}
	if _, err := os.Stat(cfg.auditLog); err != nil {
		return false, fmt.Errorf("no audit log at %s: the local cluster was created without hack/kwok/audit-policy.yaml; recreate it (make cluster-down cluster): %w", cfg.auditLog, err)
	}
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("chaos: size %s (%d Ats per scenario), seed %d\n", cfg.size, sz.ats, cfg.seed)

	h := &harness{cfg: cfg, size: sz, rand: rand.New(rand.NewPCG(cfg.seed, cfg.seed))}
	if h.cl, err = cluster.Connect(cfg.kubeconfig, "cnat-chaos", cluster.Limits{QPS: 200, Burst: 400}); err != nil {
		return false, fmt.Errorf("-kubeconfig: %w", err)
	}
	if err := h.labelSimulatedNodes(ctx); err != nil {
		return false, err
	}
	h.replicas = []*replica{{h: h, index: 0}, {h: h, index: 1}}
	h.proxy, err = newWebhookProxy(":9443", h.webhookBackends)
	if err != nil {
		return false, err
	}
	defer h.proxy.close()

	for _, s := range selected {
		v, scenarioFailed, err := h.runScenario(ctx, s)
		if err != nil {
			return false, fmt.Errorf("scenario %s: %w", s.name, err)
		}
		if s.name == "selfcheck" {
			if v.Duplicates != 1 || v.Lost != 0 || v.Silent != 0 || v.FalseSucceeded != 0 {
				fmt.Println("chaos selfcheck: the judge did not report the hand-made duplicate Pod as duplicates=1 lost=0 silent=0 falseSucceeded=0")
				failed = true
			}
			continue
		}
		failed = failed || v.Failed() || scenarioFailed
	}
	return failed, nil
}

// labelSimulatedNodes labels the nodes kwok simulates
// cnat.programming-kubernetes.info/simulated=true where they lack it, and
// keeps their names, sorted, in h.nodes.
func (h *harness) labelSimulatedNodes(ctx context.Context) error {
	var nodes corev1.NodeList
	if err := h.cl.Client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.Annotations["kwok.x-k8s.io/node"] != "fake" {
			continue
		}
		h.nodes = append(h.nodes, node.Name)
		if node.Labels[cluster.SimulatedLabel] == "true" {
			continue
		}
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, cluster.SimulatedLabel)
		if err := h.cl.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("labelling node %s: %w", node.Name, err)
		}
	}
	if len(h.nodes) == 0 {
		return errors.New("the cluster has no simulated nodes (annotation kwok.x-k8s.io/node=fake)")
	}
	slices.Sort(h.nodes)
	return nil
}

// webhookBackends are the webhook servers of the replicas that run and are
// not stopped.
func (h *harness) webhookBackends() []string {
	var addrs []string
	for _, r := range h.replicas {
		if r.serving() {
			addrs = append(addrs, r.webhookAddr())
		}
	}
	return addrs
}

// stopReplicas ends every replica gracefully.
func (h *harness) stopReplicas() {
	for _, r := range h.replicas {
		r.Stop()
	}
}

// pause sleeps for a random duration in [min, max).
func (h *harness) pause(ctx context.Context, minimum, maximum time.Duration) error {
	d := minimum + time.Duration(h.rand.Int64N(int64(maximum-minimum)))
	return poll.Sleep(ctx, d)
}

// sleepUntil sleeps until t.
func sleepUntil(ctx context.Context, t time.Time) error {
	return poll.Sleep(ctx, time.Until(t))
}
