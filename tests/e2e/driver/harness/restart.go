package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// RestartAPIServer kills the control plane's kube-apiserver (SIGKILL, as a crash or an OOM kill
// would), waits `down`, and starts it again with the same command line: the same port,
// certificates, tokens and etcd, so every client reconnects to the same address and finds its
// data. The new process id replaces the old one in DIR/env (so `run.sh down` stops it) and its
// output is appended to DIR/apiserver.log. Returns once /readyz answers 200, with how long the
// API server was unreachable.
func RestartAPIServer(ctx context.Context, e *Env, down time.Duration) (time.Duration, error) {
	envFile := filepath.Join(e.Dir, "env")
	data, err := os.ReadFile(envFile)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^APISERVER_PID=(\d+)$`).FindSubmatch(data)
	if m == nil {
		return 0, fmt.Errorf("%s: no APISERVER_PID", envFile)
	}
	pid, _ := strconv.Atoi(string(m[1]))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver %d: %w", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || !strings.HasSuffix(args[0], "kube-apiserver") {
		return 0, fmt.Errorf("process %d is not kube-apiserver: %q", pid, args)
	}
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill kube-apiserver %d: %w", pid, err)
	}
	err = Poll(ctx, 20*time.Second, fmt.Sprintf("kube-apiserver %d gone", pid), func(context.Context) (bool, error) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true, nil
		}
		// A zombie (state Z, waiting for its parent to reap it) no longer holds its port.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	logFile, err := os.OpenFile(filepath.Join(e.Dir, "apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own: it outlives the test process and its signals, as the first one did.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return 0, err
	}
	logFile.Close()
	go cmd.Wait() // reaped when it ends while the test runs
	updated := regexp.MustCompile(`(?m)^APISERVER_PID=\d+$`).ReplaceAll(data,
		[]byte(fmt.Sprintf("APISERVER_PID=%d", cmd.Process.Pid)))
	if err := os.WriteFile(envFile, updated, 0o644); err != nil {
		return 0, err
	}
	if err := waitReady(ctx, e); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// waitReady polls the API server's /readyz as admin until it answers 200 (at most a minute).
func waitReady(ctx context.Context, e *Env) error {
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig("admin"))
	if err != nil {
		return err
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	ca, err := os.ReadFile(cluster.CertificateAuthority)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return errors.New("no certificate in " + cluster.CertificateAuthority)
	}
	client := &http.Client{Timeout: 2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	return Poll(ctx, time.Minute, "kube-apiserver ready", func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cluster.Server+"/readyz", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+user.Token)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
