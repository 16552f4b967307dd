// Command gitops-engines runs the health and apply logic of the GitOps engines the
// project's users run, from those engines' own Go modules, so the integration tests can
// ask them what they make of a Workspace:
//
//	gitops-engines kstatus < object.json
//	    kstatus from sigs.k8s.io/cli-utils and from Flux's fork github.com/fluxcd/cli-utils
//	gitops-engines argocd-health SCRIPT.lua < object.json
//	    a resource health script under github.com/yuin/gopher-lua, the interpreter Argo CD
//	    embeds, with the object handed to it as Argo CD hands it
//	gitops-engines ssa-apply --kubeconfig FILE --manifest FILE [--wait DURATION]
//	    Flux's apply engine github.com/fluxcd/pkg/ssa: server-side apply with its drift
//	    detection, then (with --wait) its kstatus wait for the applied set
//
// Each prints one JSON document on stdout. Errors go to stderr with a non-zero exit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	fluxstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: gitops-engines kstatus | argocd-health SCRIPT | ssa-apply --kubeconfig FILE --manifest FILE [--wait DURATION]"))
	}
	var out any
	var err error
	switch os.Args[1] {
	case "kstatus":
		out, err = computeKstatus(os.Stdin)
	case "argocd-health":
		if len(os.Args) != 3 {
			fail(errors.New("usage: gitops-engines argocd-health SCRIPT.lua < object.json"))
		}
		out, err = argocdHealth(os.Args[2], os.Stdin)
	case "ssa-apply":
		out, err = ssaApply(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gitops-engines:", err)
	os.Exit(1)
}

func readObject(r io.Reader) (*unstructured.Unstructured, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("reading the object: %w", err)
	}
	return object, nil
}

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// computeKstatus asks both kstatus implementations: Flux links its fork, kubectl-adjacent
// tools (kpt, cli-utils' own applier) the upstream one.
func computeKstatus(r io.Reader) (any, error) {
	object, err := readObject(r)
	if err != nil {
		return nil, err
	}
	upstream, err := kstatus.Compute(object)
	if err != nil {
		return nil, fmt.Errorf("sigs.k8s.io/cli-utils kstatus: %w", err)
	}
	flux, err := fluxstatus.Compute(object)
	if err != nil {
		return nil, fmt.Errorf("fluxcd/cli-utils kstatus: %w", err)
	}
	return map[string]verdict{
		"cliUtils": {Status: upstream.Status.String(), Message: upstream.Message},
		"flux":     {Status: flux.Status.String(), Message: flux.Message},
	}, nil
}

// argocdHealth runs a health script the way Argo CD's resource customizations do: a Lua
// state with only the libraries Argo CD opens for them (package, base, table; no string
// or math, so a script that needs them fails here as it would there), a 1 s limit, the
// live object as the global `obj` (objects as tables, arrays as 1-based tables), and the
// script's returned table read for `status` and `message`.
func argocdHealth(scriptPath string, r io.Reader) (any, error) {
	script, err := os.ReadFile(scriptPath)
	if err != nil {
		return nil, err
	}
	object, err := readObject(r)
	if err != nil {
		return nil, err
	}
	state := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer state.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	state.SetContext(ctx)
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		state.Push(state.NewFunction(lib.open))
		state.Push(lua.LString(lib.name))
		state.Call(1, 0)
	}
	state.SetGlobal("obj", toLua(state, object.Object))
	if err := state.DoString(string(script)); err != nil {
		return nil, fmt.Errorf("the health script failed: %w", err)
	}
	returned, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		return nil, errors.New("the health script returned no table")
	}
	return verdict{
		Status:  lua.LVAsString(returned.RawGetString("status")),
		Message: lua.LVAsString(returned.RawGetString("message")),
	}, nil
}

func toLua(state *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case map[string]any:
		table := state.NewTable()
		for key, item := range v {
			table.RawSetString(key, toLua(state, item))
		}
		return table
	case []any:
		table := state.NewTable()
		for i, item := range v {
			table.RawSetInt(i+1, toLua(state, item))
		}
		return table
	default:
		return lua.LString(fmt.Sprint(v))
	}
}

type applied struct {
	Changes []change `json:"changes"`
	// Waited is set when --wait was given and every applied object became Current.
	Waited bool `json:"waited"`
}

type change struct {
	Subject string `json:"subject"`
	Action  string `json:"action"`
}

// ssaApply applies a manifest as Flux's kustomize-controller does: its field manager,
// ApplyAllStaged with the default options, then WaitForSet on the change set.
func ssaApply(args []string) (any, error) {
	flags := flag.NewFlagSet("ssa-apply", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the cluster")
	manifest := flags.String("manifest", "", "YAML manifest to apply")
	waitFor := flags.Duration("wait", 0, "wait this long for the applied objects to become Current")
	if err := flags.Parse(args); err != nil {
		return nil, err
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	kube, err := client.New(config, client.Options{Mapper: mapper})
	if err != nil {
		return nil, err
	}
	manager := ssa.NewResourceManager(kube, polling.NewStatusPoller(kube, mapper, polling.Options{}), ssa.Owner{
		Field: "kustomize-controller",
		Group: "kustomize.toolkit.fluxcd.io",
	})
	file, err := os.Open(*manifest)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	objects, err := ssautils.ReadObjects(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", *manifest, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	changeSet, err := manager.ApplyAllStaged(ctx, objects, ssa.DefaultApplyOptions())
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	result := applied{Changes: []change{}}
	for _, entry := range changeSet.Entries {
		result.Changes = append(result.Changes, change{Subject: entry.Subject, Action: string(entry.Action)})
	}
	if *waitFor > 0 {
		options := ssa.WaitOptions{Interval: 500 * time.Millisecond, Timeout: *waitFor, FailFast: true}
		if err := manager.WaitForSet(changeSet.ToObjMetadataSet(), options); err != nil {
			return nil, fmt.Errorf("wait: %w", err)
		}
		result.Waited = true
	}
	return result, nil
}
