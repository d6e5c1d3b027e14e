// gantry-e2e prepares a control plane started by tests/e2e/control-plane.sh for Gantry and plays
// the kubelet of its fake nodes:
//
//	gantry-e2e setup DIR [--nodes N] [--deploy=false]
//	                                   CRDs, deploy/ manifests, user bindings, N fake GPU nodes
//	                                   (--deploy=false: CRDs and nodes only, Gantry not installed)
//	gantry-e2e kubelet DIR             run the fake kubelet until interrupted
//	gantry-e2e render [--namespace NS] print the Helm chart rendered with its default values
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"gantry/tests/e2e/driver/harness"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gantry-e2e setup DIR [--nodes N] [--deploy=false] | kubelet DIR | render [--namespace NS]")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	logger := log.New(os.Stderr, "gantry-e2e: ", log.LstdFlags|log.Lmicroseconds)
	switch os.Args[1] {
	case "setup":
		fs := flag.NewFlagSet("setup", flag.ExitOnError)
		nodes := fs.Int("nodes", 2, "fake GPU nodes (8 GPUs each) to create")
		deploy := fs.Bool("deploy", true, "apply deploy/ and bind the component users")
		dir := positional(fs, os.Args[2:])
		env, err := harness.Load(dir)
		if err != nil {
			logger.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		if !*deploy {
			if err := env.SetupWithoutGantry(ctx, *nodes); err != nil {
				logger.Fatal(err)
			}
			logger.Printf("setup done in %s: CRDs and %d fake GPU nodes (Gantry not installed)",
				time.Since(start).Round(time.Millisecond), *nodes)
			return
		}
		if err := env.Setup(ctx, *nodes); err != nil {
			logger.Fatal(err)
		}
		logger.Printf("setup done in %s: CRDs, deploy/, users %s, %s and %s bound, %d fake GPU nodes",
			time.Since(start).Round(time.Millisecond), harness.SchedulerUser, harness.BinderUser,
			harness.PodGrouperUser, *nodes)
	case "kubelet":
		fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
		dir := positional(fs, os.Args[2:])
		env, err := harness.Load(dir)
		if err != nil {
			logger.Fatal(err)
		}
		admin, err := env.Clients("admin")
		if err != nil {
			logger.Fatal(err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		k := &harness.FakeKubelet{Client: admin.Kube, Log: logger}
		logger.Printf("fake kubelet running for nodes labelled %s=true", harness.FakeNodeLabel)
		if err := k.Run(ctx); err != nil {
			logger.Fatal(err)
		}
	case "render":
		fs := flag.NewFlagSet("render", flag.ExitOnError)
		ns := fs.String("namespace", harness.Namespace, "release namespace")
		fs.Parse(os.Args[2:])
		root, err := harness.RepoRoot()
		if err != nil {
			logger.Fatal(err)
		}
		out, how, err := harness.RenderChart(filepath.Join(root, "deploy", "helm", "gantry"), "gantry", *ns, nil)
		if err != nil {
			logger.Fatal(err)
		}
		logger.Printf("rendered with %s", how)
		fmt.Print(out)
	default:
		usage()
	}
}

// positional parses flags that may come before or after one positional argument.
func positional(fs *flag.FlagSet, args []string) string {
	fs.Parse(args)
	if fs.NArg() == 0 {
		return ""
	}
	dir := fs.Arg(0)
	fs.Parse(fs.Args()[1:])
	return dir
}
