// Package e2e is cnat's end-to-end suite: it drives a real cluster, given
// by KUBECONFIG, on which cnat is deployed from a Kustomize overlay, and
// asserts what a user sees — phase, conditions, exit code, Events, Pods.
//
// It runs unchanged on the embedded local cluster (make e2e: kwok nodes,
// the controller on the host with its ServiceAccount's token; make
// e2e-real: a real kubelet node, the controller in-cluster) and on kind
// (make e2e-kind: real nodes, the controller in-cluster). The Pods it
// creates carry both a real command and the annotations with which the
// local cluster's simulated kubelet imitates that command, so each
// scenario means the same on both. On the local cluster a Pod without
// placement of its own runs on the real node where there is one; make e2e
// sends the annotated Pods to the simulated nodes explicitly.
//
// Build tag: e2e. Environment:
//
//	KUBECONFIG                  the cluster (required)
//	CNAT_E2E_CONTROLLER_LOG     a file with the controller's log, printed when a test fails
//	CNAT_E2E_NODES              simulated: the Ats that imitate their command with the
//	                            simulated kubelet's annotations ask for the simulated
//	                            nodes (make e2e); real: every Pod must run on the local
//	                            cluster's real node, its default (make e2e-real)
//	CNAT_E2E_OVERLAY            the overlay cnat was installed from, when its controller's
//	                            permissions differ from the base's: production (make
//	                            e2e-release) compares them with
//	                            testdata/controller-permissions-production.txt
//	CNATCTL                     the cnatctl binary (default ../bin/cnatctl)
package e2e
