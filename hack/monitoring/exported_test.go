package main

import (
	"go/ast"
	"go/constant"
	"go/types"
	"os"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// metric is a metric the controller exports: what it is, and its labels.
type metric struct {
	histogram bool // _bucket, _sum and _count series
	summary   bool // _sum and _count series
	labels    map[string]bool
	// known is false when a label list was not a constant the test could
	// read: then its labels are not checked.
	known bool
}

// exported reads, from the source of the packages linked into the
// controller (cmd/cnat-controller), every metric the controller can export:
// cnat's own (internal/controller/metrics.go, internal/atcache/metrics.go)
// and controller-runtime's (at the version go.mod pins), with their label
// names, from the calls of client_golang's constructors
// (prometheus.NewCounterVec(opts, labels), NewDesc...) with their constant
// arguments resolved by the type checker.
// A metric whose name is not a constant there (built by a helper from a
// parameter, as controller-runtime's rest_client_* histograms are) is
// left out: the check then refuses it, never wrongly accepts it. It also
// returns the controller's leader election ID.
func exported(t *testing.T) (map[string]*metric, string) {
	t.Helper()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	// Which packages the controller links, by the import graph alone.
	graph, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: repoRoot, Env: env},
		"./cmd/cnat-controller")
	if err != nil {
		t.Fatalf("loading the controller's import graph: %v", err)
	}
	var linked []string
	packages.Visit(graph, nil, func(p *packages.Package) {
		if strings.HasPrefix(p.PkgPath, "sigs.k8s.io/controller-runtime/") || strings.HasPrefix(p.PkgPath, "github.com/programming-kubernetes/cnat/") {
			linked = append(linked, p.PkgPath)
		}
	})
	sort.Strings(linked)
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  repoRoot,
		Env:  env,
	}, linked...)
	if err != nil {
		t.Fatalf("loading %v: %v", linked, err)
	}
	metrics := map[string]*metric{}
	var leaderElectionID string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("loading %s: %v", p.PkgPath, e)
		}
		for _, file := range p.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					if key, ok := n.Key.(*ast.Ident); ok && key.Name == "LeaderElectionID" {
						if id, ok := stringConst(p.TypesInfo, n.Value); ok {
							leaderElectionID = id
						}
					}
				case *ast.CallExpr:
					addMetric(p.TypesInfo, n, metrics)
				}
				return true
			})
		}
	}
	if len(metrics) == 0 || leaderElectionID == "" {
		t.Fatalf("found %d metrics and leader election ID %q in %v", len(metrics), leaderElectionID, linked)
	}
	return metrics, leaderElectionID
}

// addMetric adds the metric a call of one of client_golang's constructors
// creates, when its name is a constant.
func addMetric(info *types.Info, call *ast.CallExpr, metrics map[string]*metric) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "github.com/prometheus/client_golang/prometheus" {
		return
	}
	m := &metric{labels: map[string]bool{}, known: true}
	var name string
	var labels ast.Expr
	switch fn.Name() {
	case "NewDesc":
		var ok bool
		if name, ok = stringConst(info, call.Args[0]); !ok {
			return
		}
		labels = call.Args[2]
	case "NewCounter", "NewGauge", "NewHistogram", "NewSummary", "NewCounterFunc", "NewGaugeFunc",
		"NewCounterVec", "NewGaugeVec", "NewHistogramVec", "NewSummaryVec":
		var ok bool
		if name, ok = optsName(info, call.Args[0]); !ok {
			return
		}
		m.histogram = strings.HasPrefix(fn.Name(), "NewHistogram")
		m.summary = strings.HasPrefix(fn.Name(), "NewSummary")
		if strings.HasSuffix(fn.Name(), "Vec") {
			labels = call.Args[1]
		}
	default:
		return
	}
	if labels != nil {
		values, ok := stringsConst(info, labels)
		m.known = ok
		for _, l := range values {
			m.labels[l] = true
		}
	}
	metrics[name] = m
}

// optsName is the full name of the metric an Opts literal describes:
// namespace_subsystem_name, as prometheus.BuildFQName joins them; false
// when they are not constants.
func optsName(info *types.Info, e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.UnaryExpr:
		return optsName(info, x.X)
	case *ast.CallExpr: // a conversion, prometheus.GaugeOpts(opts)
		if len(x.Args) == 1 {
			return optsName(info, x.Args[0])
		}
	case *ast.CompositeLit:
		parts := map[string]string{}
		for _, elt := range x.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key := kv.Key.(*ast.Ident).Name
			if key == "Namespace" || key == "Subsystem" || key == "Name" {
				v, ok := stringConst(info, kv.Value)
				if !ok {
					return "", false
				}
				parts[key] = v
			}
		}
		var name []string
		for _, key := range []string{"Namespace", "Subsystem", "Name"} {
			if parts[key] != "" {
				name = append(name, parts[key])
			}
		}
		return strings.Join(name, "_"), true
	}
	return "", false
}

func stringConst(info *types.Info, e ast.Expr) (string, bool) {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(tv.Value), true
}

// stringsConst reads a []string{...} literal of constants (nil: none).
func stringsConst(info *types.Info, e ast.Expr) ([]string, bool) {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return nil, true
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	var out []string
	for _, elt := range lit.Elts {
		s, ok := stringConst(info, elt)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
