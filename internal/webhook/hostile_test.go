package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// An input a careless or hostile user may send, and what the API server
// must answer.
type inputCase struct {
	class, name string
	// v1alpha1 sends the At through the book's version.
	v1alpha1 bool
	// edit changes a valid At (schedule 2099-01-01T00:00:00Z, command echo).
	edit func(obj map[string]any)
	// strict asks the API server to refuse unknown fields
	// (fieldValidation=Strict, as kubectl does).
	strict bool
	// accept: the input is at a limit, not past it, and must be stored.
	accept bool
	// stored is, for an accepted input, the field at its limit (dotted, list
	// indices as numbers): read back through the version it was sent
	// through, it must hold what was sent.
	stored string
	// wantField is the field the refusal must name, exactly (not a field
	// within it or around it); wantText a part of what it must say of that
	// field: what is accepted, or what is wrong. The same in both versions:
	// the conversion webhook passes a value of the wrong type through, and
	// the schema of the version sent through refuses it.
	wantField, wantText string
}

func set(path string, value any) func(map[string]any) {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = value
	}
}

func all(edits ...func(map[string]any)) func(map[string]any) {
	return func(obj map[string]any) {
		for _, e := range edits {
			e(obj)
		}
	}
}

func wallClock(zone string) func(map[string]any) {
	return all(set("spec.schedule", "2099-01-01T09:00"), set("spec.timeZone", zone))
}

func template(spec map[string]any) func(map[string]any) {
	return set("spec.template", map[string]any{"spec": spec})
}

func container(fields map[string]any) map[string]any {
	c := map[string]any{"name": "main", "image": "alpine:3.20"}
	for k, v := range fields {
		c[k] = v
	}
	return map[string]any{"containers": []any{c}}
}

// inBothVersions is each case sent through v1beta1 and through v1alpha1.
func inBothVersions(cases ...inputCase) []inputCase {
	var out []inputCase
	for _, c := range cases {
		out = append(out, c)
		c.v1alpha1 = true
		out = append(out, c)
	}
	return out
}

// hostileInputs are the classes of docs/reliability.md.
func hostileInputs() []inputCase {
	var cases []inputCase
	add := func(cs ...inputCase) { cases = append(cases, cs...) }
	rfc := "RFC 3339"
	tzPattern := "should match '^[A-Za-z][A-Za-z0-9_+\\-]*(/[A-Za-z0-9_+\\-]+)*$'"

	add(inBothVersions(
		inputCase{class: "schedule", name: "words", edit: set("spec.schedule", "tomorrow at nine"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "30 February", edit: set("spec.schedule", "2099-02-30T09:00:00Z"), wantField: "spec.schedule", wantText: "2099-02-30"},
		inputCase{class: "schedule", name: "hour 25", edit: set("spec.schedule", "2099-01-01T25:00:00Z"), wantField: "spec.schedule", wantText: "the hour must be between 00 and 23"},
		inputCase{class: "schedule", name: "lowercase t and z", edit: set("spec.schedule", "2099-01-01t09:00:00z"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "10 000 characters", edit: set("spec.schedule", strings.Repeat("2", 10000)), wantField: "spec.schedule", wantText: "64"},
		inputCase{class: "schedule", name: "Arabic-Indic digits", edit: set("spec.schedule", "٢٠٩٩-٠١-٠١T٠٩:٠٠:٠٠Z"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "fullwidth colons", edit: set("spec.schedule", "2099-01-01T09：00：00Z"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "trailing NUL", edit: set("spec.schedule", "2099-01-01T09:00:00Z\x00"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "trailing newline", edit: set("spec.schedule", "2099-01-01T09:00:00Z\n"), wantField: "spec.schedule", wantText: rfc},
		inputCase{class: "schedule", name: "wall clock without time zone", edit: set("spec.schedule", "2099-01-01T09:00:00"), wantField: "spec.schedule", wantText: "spec.timeZone"},
		inputCase{class: "schedule", name: "offset and time zone", edit: set("spec.timeZone", "Europe/Berlin"), wantField: "spec.schedule", wantText: "without offset"},
		inputCase{class: "schedule", name: "missing", edit: func(o map[string]any) { delete(o["spec"].(map[string]any), "schedule") }, wantField: "spec.schedule", wantText: "Required"},

		inputCase{class: "timeZone", name: "unknown zone", edit: wallClock("Mars/Olympus_Mons"), wantField: "spec.timeZone", wantText: "Mars/Olympus_Mons"},
		inputCase{class: "timeZone", name: "Local", edit: wallClock("Local"), wantField: "spec.timeZone", wantText: "Local"},
		inputCase{class: "timeZone", name: "a path", edit: wallClock("../../etc/passwd"), wantField: "spec.timeZone", wantText: tzPattern},
		inputCase{class: "timeZone", name: "Cyrillic look-alike", edit: wallClock("Еurope/Berlin"), wantField: "spec.timeZone", wantText: tzPattern},
		inputCase{class: "timeZone", name: "1000 characters", edit: wallClock(strings.Repeat("A", 1000)), wantField: "spec.timeZone", wantText: "64"},
		inputCase{class: "timeZone", name: "NUL", edit: wallClock("Europe/Berlin\x00"), wantField: "spec.timeZone", wantText: tzPattern},
		inputCase{class: "timeZone", name: "a real zone", edit: wallClock("America/Argentina/Buenos_Aires"), accept: true, stored: "spec.timeZone"},

		inputCase{class: "command", name: "empty", edit: set("spec.command", ""), wantField: "spec.command", wantText: "at least 1 chars long"},
		inputCase{class: "command", name: "NUL", edit: set("spec.command", "echo a\x00b"), wantField: "spec.command", wantText: "NUL"},
		inputCase{class: "command", name: "32769 characters", edit: set("spec.command", strings.Repeat("x", 32769)), wantField: "spec.command", wantText: "32768"},
		inputCase{class: "command", name: "32768 characters of 4 bytes", edit: set("spec.command", strings.Repeat("😀", 32768)), wantField: "spec.command", wantText: "131071"},
		inputCase{class: "command", name: "32768 ASCII characters", edit: set("spec.command", "echo "+strings.Repeat("x", 32763)), accept: true, stored: "spec.command"},
		inputCase{class: "command", name: "131071 bytes in 32768 characters", edit: set("spec.command", strings.Repeat("😀", 32767)+"€"), accept: true, stored: "spec.command"},
		inputCase{class: "command", name: "escape and bell characters", edit: set("spec.command", "printf '\x1b[31mred\x07'"), accept: true, stored: "spec.command"},
		inputCase{class: "command", name: "right-to-left override", edit: set("spec.command", "echo \u202egnp.exe"), accept: true, stored: "spec.command"},

		inputCase{class: "numbers", name: "startingDeadlineSeconds -1", edit: set("spec.startingDeadlineSeconds", -1), wantField: "spec.startingDeadlineSeconds", wantText: "greater than or equal to 0"},
		inputCase{class: "numbers", name: "startingDeadlineSeconds 2^31", edit: set("spec.startingDeadlineSeconds", int64(1)<<31), wantField: "spec.startingDeadlineSeconds", wantText: "less than or equal to 2147483647"},
		inputCase{class: "numbers", name: "startingDeadlineSeconds 2^31-1", edit: set("spec.startingDeadlineSeconds", int64(1)<<31-1), accept: true, stored: "spec.startingDeadlineSeconds"},
		inputCase{class: "numbers", name: "activeDeadlineSeconds 0", edit: set("spec.activeDeadlineSeconds", 0), wantField: "spec.activeDeadlineSeconds", wantText: "greater than or equal to 1"},
		inputCase{class: "numbers", name: "activeDeadlineSeconds 2^31", edit: set("spec.activeDeadlineSeconds", int64(1)<<31), wantField: "spec.activeDeadlineSeconds", wantText: "less than or equal to 2147483647"},
		inputCase{class: "numbers", name: "activeDeadlineSeconds 2^31-1", edit: set("spec.activeDeadlineSeconds", int64(1)<<31-1), accept: true, stored: "spec.activeDeadlineSeconds"},
		inputCase{class: "numbers", name: "backoffLimit -1", edit: set("spec.backoffLimit", -1), wantField: "spec.backoffLimit", wantText: "greater than or equal to 0"},
		inputCase{class: "numbers", name: "backoffLimit 101", edit: set("spec.backoffLimit", 101), wantField: "spec.backoffLimit", wantText: "less than or equal to 100"},
		inputCase{class: "numbers", name: "backoffLimit 100000", edit: set("spec.backoffLimit", 100000), wantField: "spec.backoffLimit", wantText: "less than or equal to 100"},
		inputCase{class: "numbers", name: "backoffLimit 100", edit: set("spec.backoffLimit", 100), accept: true, stored: "spec.backoffLimit"},
		inputCase{class: "numbers", name: "ttlSecondsAfterFinished -1", edit: set("spec.ttlSecondsAfterFinished", -1), wantField: "spec.ttlSecondsAfterFinished", wantText: "greater than or equal to 0"},
		inputCase{class: "numbers", name: "ttlSecondsAfterFinished 2^31", edit: set("spec.ttlSecondsAfterFinished", int64(1)<<31), wantField: "spec.ttlSecondsAfterFinished", wantText: "int32"},
		inputCase{class: "numbers", name: "ttlSecondsAfterFinished 2^31-1", edit: set("spec.ttlSecondsAfterFinished", int64(1)<<31-1), accept: true, stored: "spec.ttlSecondsAfterFinished"},

		inputCase{class: "types", name: "backoffLimit as a string", edit: set("spec.backoffLimit", "2"), wantField: "spec.backoffLimit", wantText: "integer"},
		inputCase{class: "types", name: "activeDeadlineSeconds as a fraction", edit: set("spec.activeDeadlineSeconds", 1.5), wantField: "spec.activeDeadlineSeconds", wantText: "integer"},
		inputCase{class: "types", name: "suspend as a string", edit: set("spec.suspend", "yes"), wantField: "spec.suspend", wantText: "boolean"},
		inputCase{class: "types", name: "command as a list", edit: set("spec.command", []any{"echo", "hi"}), wantField: "spec.command", wantText: "string"},
		inputCase{class: "types", name: "spec as a string", edit: set("spec", "echo"), wantField: "spec", wantText: "object"},

		inputCase{class: "name", name: "64 characters", edit: set("metadata.name", strings.Repeat("a", 64)), wantField: "metadata.name", wantText: "63"},
		inputCase{class: "name", name: "63 characters", edit: set("metadata.name", strings.Repeat("b", 63)), accept: true, stored: "metadata.name"},
		inputCase{class: "name", name: "non-ASCII", edit: set("metadata.name", "ät"), wantField: "metadata.name", wantText: "RFC 1123"},

		inputCase{class: "careless", name: "typo comand", strict: true, edit: set("spec.comand", "echo"), wantField: "spec.comand", wantText: "unknown field"},
		inputCase{class: "careless", name: "typo schedual", strict: true, edit: set("spec.schedual", "2099-01-01T00:00:00Z"), wantField: "spec.schedual", wantText: "unknown field"}, //nolint:misspell // the typo is the input
	)...)

	tmpl := func(name string, spec map[string]any, wantField, wantText string) inputCase {
		return inputCase{class: "template", name: name, edit: template(spec), wantField: wantField, wantText: wantText}
	}
	add(inBothVersions(
		tmpl("restartPolicy Always", map[string]any{"restartPolicy": "Always", "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.restartPolicy", "Never"),
		tmpl("no containers", map[string]any{}, "spec.template.spec.containers", "must be of type array"),
		tmpl("container name not a DNS label", container(map[string]any{"name": "Main_Container"}), "spec.template.spec.containers[0].name", "RFC 1123"),
		tmpl("env name with =", container(map[string]any{"env": []any{map[string]any{"name": "MY=VAR", "value": "x"}}}), "spec.template.spec.containers[0].env[0].name", "MY=VAR"),
		tmpl("env value with NUL", container(map[string]any{"env": []any{map[string]any{"name": "V", "value": "a\x00b"}}}), "spec.template.spec.containers[0].env[0].value", "NUL"),
		tmpl("image with NUL", container(map[string]any{"image": "alpine\x00:3.20"}), "spec.template.spec.containers[0].image", "NUL"),
		tmpl("mount of no volume", container(map[string]any{"volumeMounts": []any{map[string]any{"name": "data", "mountPath": "/data"}}}), "spec.template.spec.containers[0].volumeMounts[0].name", "Not found"),
		inputCase{class: "template", name: "quantity that does not parse", edit: template(container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "lots"}}})),
			wantField: "spec.template.spec.containers[0].resources.limits.cpu", wantText: "should match"},
		tmpl("negative memory", container(map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "-1Gi"}}}), "spec.template.spec.containers[0].resources.limits[memory]", "must be greater than or equal to 0"),
		tmpl("request above limit", container(map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}, "limits": map[string]any{"cpu": "1"}}}), "spec.template.spec.containers[0].resources.requests", "less than or equal to cpu limit"),
		tmpl("impossible service account name", map[string]any{"serviceAccountName": "Not A Name!", "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.serviceAccountName", "RFC 1123"),
		tmpl("port out of range", container(map[string]any{"ports": []any{map[string]any{"containerPort": 70000}}}), "spec.template.spec.containers[0].ports[0].containerPort", "between 1 and 65535"),
		tmpl("duplicate container names", map[string]any{"containers": []any{map[string]any{"name": "a", "image": "x"}, map[string]any{"name": "a", "image": "x"}}}, "spec.template.spec.containers[1]", "Duplicate"),
		tmpl("template activeDeadlineSeconds 0", map[string]any{"activeDeadlineSeconds": 0, "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.activeDeadlineSeconds", "must be between 1 and 2147483647"),
		inputCase{class: "template", name: "label value of 64 characters", edit: set("spec.template", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": strings.Repeat("v", 64)}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
		}), wantField: "spec.template.metadata.labels", wantText: "63"},
		tmpl("RuntimeClass name with a slash", map[string]any{"runtimeClassName": "../x", "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.runtimeClassName", "RFC 1123"),
		tmpl("PriorityClass name with a slash", map[string]any{"priorityClassName": "a/b", "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.priorityClassName", "RFC 1123"),
		tmpl("two volumes of one name", map[string]any{"volumes": []any{map[string]any{"name": "v", "emptyDir": map[string]any{}}, map[string]any{"name": "v", "emptyDir": map[string]any{}}}, "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.volumes[1]", "Duplicate"),
		inputCase{class: "template", name: "activeDeadlineSeconds of the At past the Pod's limit", edit: all(template(container(nil)), set("spec.activeDeadlineSeconds", int64(1)<<31)), wantField: "spec.activeDeadlineSeconds", wantText: "2147483647"},
		tmpl("hostPath with ..", map[string]any{"volumes": []any{map[string]any{"name": "v", "hostPath": map[string]any{"path": "/a/../etc"}}}, "containers": []any{map[string]any{"name": "main"}}}, "spec.template.spec.volumes[0].hostPath.path", ".."),
		inputCase{class: "template", name: "a valid template", edit: template(container(nil)), accept: true, stored: "spec.template.spec.containers.0.image"},
	)...)

	// cnat's own keys: the claims and records it puts on its Pods.
	withMetadata := func(field string, keys map[string]any) func(map[string]any) {
		return set("spec.template", map[string]any{
			"metadata": map[string]any{field: keys},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
		})
	}
	reserved := func(name, field, key string) inputCase {
		return inputCase{class: "reserved keys", name: name, edit: withMetadata(field, map[string]any{"team": "payments", key: "true"}),
			wantField: "spec.template.metadata." + field, wantText: key}
	}
	add(inBothVersions(
		reserved("the released label", "labels", cnatv1beta1.LabelReleased),
		reserved("a label naming another At", "labels", cnatv1beta1.LabelAt),
		reserved("a label cnat does not use", "labels", cnatv1beta1.KeyPrefix+"anything"),
		reserved("the spec-hash annotation", "annotations", cnatv1beta1.AnnotationSpecHash),
		reserved("an annotation cnat does not use", "annotations", cnatv1beta1.KeyPrefix+"anything"),
		inputCase{class: "reserved keys", name: "a key in a subdomain of cnat's", edit: withMetadata("labels", map[string]any{"team.cnat.programming-kubernetes.info/role": "x"}),
			accept: true, stored: "spec.template.metadata.labels"},
	)...)

	// What the kernel passes to a container's process: every argument and
	// environment string at most 131071 bytes (MaxCommandBytes), all of
	// them together at most 1 MiB (MaxExecBytes). The figures are written
	// out, so that a changed constant fails here.
	const maxArg, maxExec = 131071, 1 << 20
	c := containerSpec // a container of the template, with fields
	env := func(name string, n int) map[string]any {
		return map[string]any{"env": []any{map[string]any{"name": name, "value": strings.Repeat("x", n)}}}
	}
	exec := func(name string, edit func(map[string]any), wantField, wantText string) inputCase {
		return inputCase{class: "exec", name: name, edit: edit, wantField: wantField, wantText: wantText}
	}
	atLimit := func(name string, edit func(map[string]any), stored string) inputCase {
		return inputCase{class: "exec", name: name, edit: edit, accept: true, stored: stored}
	}
	shEcho := []string{"/bin/sh", "-c", "echo"}     // spec.command echo, as the first container runs it
	longCommand := strings.Repeat("😀", 32767) + "€" // 131071 bytes in the 32768 characters the schema allows
	add(inBothVersions(
		exec("300 KB env value", template(container(env("BIG", 300*1024))),
			"spec.template.spec.containers[0].env[0].value", "must be at most 131067 bytes in UTF-8 (131071 with \"BIG=\""),
		exec("env string NAME=value of 131072 bytes", template(container(env("V", maxArg-1))),
			"spec.template.spec.containers[0].env[0].value", "must be at most 131069 bytes in UTF-8 (131071 with \"V=\""),
		atLimit("env string NAME=value of 131071 bytes", template(container(env("V", maxArg-2))), "spec.template.spec.containers.0.env.0.value"),
		atLimit("env name of 131070 bytes, no value (NAME= is 131071 bytes)", template(container(env(strings.Repeat("N", maxArg-1), 0))), "spec.template.spec.containers.0.env.0.name"),
		exec("env name of 131071 bytes", template(container(env(strings.Repeat("N", maxArg), 0))),
			"spec.template.spec.containers[0].env[0].name", "must be at most 131070 bytes in UTF-8 (with \"=\""),
		exec("template argument of 131072 bytes", withoutCommand(template(container(map[string]any{"args": []any{strings.Repeat("a", maxArg+1)}}))),
			"spec.template.spec.containers[0].args[0]", "must be at most 131071 bytes in UTF-8 (the kernel's limit for one argument"),
		atLimit("template argument of 131071 bytes", withoutCommand(template(container(map[string]any{"args": []any{strings.Repeat("a", maxArg)}}))), "spec.template.spec.containers.0.args.0"),
		exec("template command of 131072 bytes", withoutCommand(template(container(map[string]any{"command": []any{"/bin/sh", "-c", strings.Repeat("c", maxArg+1)}}))),
			"spec.template.spec.containers[0].command[2]", "not 131072"),
		exec("init container env value of 300 KB", template(map[string]any{
			"initContainers": []any{c("init", env("INIT", 300*1024))},
			"containers":     []any{c("main", nil)},
		}), "spec.template.spec.initContainers[0].env[0].value", "must be at most 131066 bytes"),
		exec("second container argument of 131072 bytes", template(map[string]any{
			"containers": []any{c("main", nil), c("side", map[string]any{"args": []any{strings.Repeat("s", maxArg+1)}})},
		}), "spec.template.spec.containers[1].args[0]", "not 131072"),
		exec("environment one byte past 1 MiB in all", template(container(map[string]any{"env": execEnv(maxExec+1, shEcho...)})),
			"spec.template.spec.containers[0]", "must be at most 1048576 bytes together"),
		atLimit("environment of 1 MiB in all", template(container(map[string]any{"env": execEnv(maxExec, shEcho...)})), "spec.template.spec.containers.0.env"),
		// The environment fits beside the template's own (empty) command,
		// not beside spec.command at its limit, which the container runs.
		exec("spec.command at its limit with an environment that fits only without it", all(
			set("spec.command", longCommand),
			template(container(map[string]any{"env": execEnv(maxExec+1, "/bin/sh", "-c", longCommand)})),
		), "spec.template.spec.containers[0]", "not 1048577"),
	)...)

	// A template in which the defaulting webhook has nothing to write but
	// the author (restartPolicy set, every container and init container
	// with an image), or with values of the wrong type where a match
	// condition would read: each refused as before, naming the field.
	defaulted := func(name string, spec map[string]any, wantField, wantText string) inputCase {
		full := map[string]any{"restartPolicy": "Never"}
		for k, v := range spec {
			full[k] = v
		}
		return inputCase{class: "nothing to default", name: name, edit: template(full), wantField: wantField, wantText: wantText}
	}
	main := func(fields map[string]any) []any { return container(fields)["containers"].([]any) }
	add(inBothVersions(
		inputCase{class: "nothing to default", name: "a valid template", edit: template(map[string]any{"restartPolicy": "Never", "containers": main(nil)}),
			accept: true, stored: "spec.template.spec.restartPolicy"},
		defaulted("container name not a DNS label", map[string]any{"containers": main(map[string]any{"name": "Main_Container"})}, "spec.template.spec.containers[0].name", "RFC 1123"),
		defaulted("containers null", map[string]any{"containers": nil}, "spec.template.spec.containers", "Required value"),
		defaulted("containers a string", map[string]any{"containers": "main"}, "spec.template.spec.containers", "must be of type array"),
		defaulted("a container null", map[string]any{"containers": []any{nil}}, "spec.template.spec.containers[0].name", "Required value"),
		defaulted("image a number", map[string]any{"containers": main(map[string]any{"image": 5})}, "spec.template.spec.containers[0].image", "must be of type string"),
		defaulted("restartPolicy a number", map[string]any{"restartPolicy": 5, "containers": main(nil)}, "spec.template.spec.restartPolicy", "must be of type string"),
		defaulted("initContainers a list of a string", map[string]any{"initContainers": []any{"init"}, "containers": main(nil)}, "spec.template.spec.initContainers[0]", "must be of type object"),
		defaulted("initContainers null, a container name not a DNS label", map[string]any{"initContainers": nil, "containers": main(map[string]any{"name": "Main_Container"})}, "spec.template.spec.containers[0].name", "RFC 1123"),
		inputCase{class: "nothing to default", name: "template spec null", edit: set("spec.template", map[string]any{"spec": nil}), wantField: "spec.template.spec.containers", wantText: "must be of type array"},
		inputCase{class: "nothing to default", name: "template a string", edit: set("spec.template", "main"), wantField: "spec.template", wantText: "must be of type object"},
	)...)

	return cases
}

// containerSpec is a container of the template named name, with fields.
func containerSpec(name string, fields map[string]any) map[string]any {
	c := map[string]any{"name": name, "image": "alpine:3.20"}
	for k, v := range fields {
		c[k] = v
	}
	return c
}

// withoutCommand removes spec.command after edit, so that the template's
// first container runs its own command and args.
func withoutCommand(edit func(map[string]any)) func(map[string]any) {
	return func(obj map[string]any) {
		edit(obj)
		delete(obj["spec"].(map[string]any), "command")
	}
}

// execEnv is an env that brings what a container's process receives, with
// argv, to total bytes: each argument and each NAME=value string counts its
// bytes, its NUL and an 8-byte pointer (MaxExecBytes). Every string stays
// within 131071 bytes.
func execEnv(total int, argv ...string) []any {
	rest := total
	for _, arg := range argv {
		rest -= len(arg) + 1 + 8
	}
	// Names V0…V9: each variable costs its value and 12 bytes (name, "=",
	// NUL, pointer), its value at most 131071-3.
	const overhead, most = 12, 131071 - 3
	n := (rest + most + overhead - 1) / (most + overhead)
	values := rest - n*overhead
	var env []any
	for i := range n {
		size := values / n
		if i == 0 {
			size += values % n
		}
		env = append(env, map[string]any{"name": fmt.Sprintf("V%d", i), "value": strings.Repeat("e", size)})
	}
	return env
}

// refusal is one thing a refusal says: of the field Field, if it names
// one (a cause of its status), else of whatever Message names.
type refusal struct{ Field, Message string }

// refusals are what err says: the causes of its status (the API server's
// and the validating webhook's field errors; the CRD's type checks and a
// CEL rule without a fieldPath name their field only in the message), or
// its message if it has none (an unknown field refused by strict field
// validation).
func refusals(err error) []refusal {
	var out []refusal
	if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			out = append(out, refusal{Field: cause.Field, Message: cause.Message})
		}
	}
	if len(out) == 0 {
		out = append(out, refusal{Message: err.Error()})
	}
	return out
}

// refusing is a refusal of field (exactly: the field of a cause, or, for a
// cause without one (no field, or "<nil>"), the path written whole in its message, not as part of
// a longer one) that says text of it.
func refusing(field, text string) types.GomegaMatcher {
	inText := regexp.MustCompile(`(^|[^\w.\[\]])` + regexp.QuoteMeta(field) + `($|[^\w.\[])`)
	return Satisfy(func(r refusal) bool {
		named := r.Field == field || (r.Field == "" || r.Field == "<nil>") && inText.MatchString(r.Message)
		return named && strings.Contains(r.Message, text)
	})
}

// lookup is the value at path (dotted, list indices as numbers) in obj.
func lookup(obj map[string]any, path string) (any, bool) {
	var v any = obj
	for _, key := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[key]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func newAtObject(namespace, name string, v1alpha1 bool) *unstructured.Unstructured {
	gv := cnatv1beta1.GroupVersion
	if v1alpha1 {
		gv = cnatv1alpha1.GroupVersion
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gv.String(),
		"kind":       "At",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       map[string]any{"schedule": "2099-01-01T00:00:00Z", "command": "echo"},
	}}
}

// TestHostileAndCarelessInput sends every input of hostileInputs and
// expects each one past a limit refused with the field named, each one at a
// limit stored; it logs the counts per class (docs/reliability.md).
func TestHostileAndCarelessInput(t *testing.T) {
	ns := newNamespace(t)
	type tally struct{ tried, refused, accepted int }
	counts := map[string]*tally{}
	for i, tc := range hostileInputs() {
		version := "v1beta1"
		if tc.v1alpha1 {
			version = "v1alpha1"
		}
		t.Run(fmt.Sprintf("%s/%s/%s", tc.class, version, tc.name), func(t *testing.T) {
			g := NewWithT(t)
			obj := newAtObject(ns, fmt.Sprintf("input-%d", i), tc.v1alpha1)
			tc.edit(obj.Object)
			wantField, wantText := tc.wantField, tc.wantText
			if tc.v1alpha1 && tc.accept && tc.stored == "metadata.name" {
				obj.SetName(obj.GetName()[:62] + "a") // not the v1beta1 case's name
			}
			var opts []client.CreateOption
			if tc.strict {
				opts = append(opts, client.FieldValidation(metav1.FieldValidationStrict))
			}
			// What is sent of the field at its limit, before Create decodes
			// the answer into obj.
			key, gvk := client.ObjectKeyFromObject(obj), obj.GroupVersionKind()
			var sent []byte
			if tc.accept {
				g.Expect(tc.stored).NotTo(BeEmpty(), "an accepted case says which field is at its limit")
				value, ok := lookup(obj.Object, tc.stored)
				g.Expect(ok).To(BeTrue(), "the case sends %s", tc.stored)
				var err error
				sent, err = json.Marshal(value)
				g.Expect(err).NotTo(HaveOccurred())
			}
			err := adminClient.Create(t.Context(), obj, opts...)
			if counts[tc.class] == nil {
				counts[tc.class] = &tally{}
			}
			counts[tc.class].tried++
			if tc.accept {
				g.Expect(err).NotTo(HaveOccurred())
				counts[tc.class].accepted++
				// Read back through the version it was sent through.
				stored := &unstructured.Unstructured{}
				stored.SetGroupVersionKind(gvk)
				g.Expect(adminClient.Get(t.Context(), key, stored)).To(Succeed())
				value, ok := lookup(stored.Object, tc.stored)
				g.Expect(ok).To(BeTrue(), "%s is stored", tc.stored)
				got, err := json.Marshal(value)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(MatchJSON(sent), "%s is stored as sent", tc.stored)
				return
			}
			g.Expect(err).To(HaveOccurred(), "must be refused")
			counts[tc.class].refused++
			g.Expect(apierrors.IsInternalError(err) && !strings.Contains(err.Error(), "conversion webhook")).To(BeFalse(), "refused for a reason of its own, not by a failure: %v", err)
			g.Expect(wantField).NotTo(BeEmpty(), "a refused case names its field")
			g.Expect(wantText).NotTo(BeEmpty(), "a refused case says what the refusal must say")
			g.Expect(refusals(err)).To(ContainElement(refusing(wantField, wantText)),
				"the refusal names %s and says %q of it: %v", wantField, wantText, err)
		})
	}
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	total := tally{}
	for _, c := range classes {
		t.Logf("| %s | %d | %d refused with the field named, %d at a limit accepted |", c, counts[c].tried, counts[c].refused, counts[c].accepted)
		total.tried += counts[c].tried
		total.refused += counts[c].refused
		total.accepted += counts[c].accepted
	}
	t.Logf("| total | %d | %d refused, %d accepted |", total.tried, total.refused, total.accepted)
}
