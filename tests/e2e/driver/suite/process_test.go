package suite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"gantry/tests/e2e/driver/harness"
)

// gantryProcess is a running `gantry VERB ...` (scheduler, binder, pod-grouper, controllers). Its
// output is kept, for the port it reports and for failures; when the test ends it gets SIGTERM
// and must exit 0 within 10 seconds.
type gantryProcess struct {
	name     string
	cmd      *exec.Cmd
	mu       sync.Mutex
	out      bytes.Buffer
	done     chan error
	stopOnce sync.Once
}

func (p *gantryProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *gantryProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startGantry runs `$GANTRY_BIN ARGS...` (ARGS[0] is the verb) until the test ends; the test is
// skipped without GANTRY_BIN. `name` is how logs and failures call it.
func startGantry(t *testing.T, name string, args ...string) *gantryProcess {
	t.Helper()
	bin := os.Getenv("GANTRY_BIN")
	if bin == "" {
		t.Skip("GANTRY_BIN is not set")
	}
	return startGantryBin(t, bin, name, args...)
}

// startGantryBin is startGantry with the binary named.
func startGantryBin(t *testing.T, bin, name string, args ...string) *gantryProcess {
	t.Helper()
	p := &gantryProcess{name: name, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", bin, name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s %d output:\n%s", name, p.cmd.Process.Pid, p.output())
		}
	})
	return p
}

// stop sends SIGTERM and expects exit code 0 within 10 seconds (once; later calls do nothing).
func (p *gantryProcess) stop(t *testing.T) {
	p.stopOnce.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("%s exited with %v after SIGTERM; output:\n%s", p.name, err, p.output())
			}
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not exit within 10s of SIGTERM; output:\n%s", p.name, p.output())
		}
	})
}

// kill ends the process with SIGKILL, as a crash would (no lease released); a later stop does
// nothing.
func (p *gantryProcess) kill() {
	p.stopOnce.Do(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
}

// identitySuffix ends the process's leader-election identity (host name and process id).
func (p *gantryProcess) identitySuffix() string { return fmt.Sprintf("_%d", p.cmd.Process.Pid) }

var reportedPort = regexp.MustCompile(`serving /metrics, /healthz, /readyz on port (\d+)`)

// port is the port the process reports serving /metrics on (waited for up to 10 s).
func (p *gantryProcess) port(t *testing.T) int {
	t.Helper()
	var port int
	err := harness.Poll(context.Background(), 10*time.Second, p.name+" reports its port", func(context.Context) (bool, error) {
		if m := reportedPort.FindStringSubmatch(p.output()); m != nil {
			port, _ = strconv.Atoi(m[1])
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, p.output())
	}
	return port
}
