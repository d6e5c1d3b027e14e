package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/test/e2e/driver/harness"
)

// Time-based fairshare with a real Prometheus (the Debian package, started here on loopback).
// Until Gantry's queue-controller exports kai_queue_allocated_* itself, a small exporter in this
// test serves the queue allocation history KAI's usage queries read (queue A held 3 of the 4
// GPUs, queue B none) and kube-state-metrics' node capacity; Prometheus scrapes it every second.
// The scheduler reads usage from Prometheus through usageDBConfig:
//
//  1. with kValue 1 (the default) B gets the larger share of the next allocations: usage A 0.75,
//     B 0 -> over-quota weights 0.25 and 1 -> A 1 GPU, B 3 GPUs; with kValue 0 they split 2 / 2;
//  2. Prometheus stopped mid-run: the scheduler goes on scheduling, with the last usage until the
//     staleness period, then with none (an even split again), logging it once; it exits cleanly.
func TestLiveSchedulerTimeBasedFairshare(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not found (Debian package prometheus; scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	// Each round creates its pods first and then the node they fit on, so the first cycle that can
	// place anything sees both queues asking.
	exclusiveNodes(t, ctx)
	qa, qb := "tbf-a-"+id, "tbf-b-"+id
	createQueue(t, ctx, qa, 0)
	createQueue(t, ctx, qb, 0)

	exporter := startExporter(t, qa, qb)
	prom := startPrometheus(t, promBin, exporter)
	// A few seconds of history before the scheduler first asks.
	waitPromData(t, ctx, prom.url, `kai_queue_allocated_gpus{queue_name="`+qa+`"}`, 5)

	run := func(t *testing.T, kValue string, staleness string) (*schedulerProcess, func(string) map[string]int) {
		cfg := filepath.Join(t.TempDir(), "scheduler.yaml")
		writeFile(t, cfg, schedulerConfigWithUsage(prom.url, kValue, staleness))
		sched := startScheduler(t, "--config", cfg)
		// share creates 4 single-GPU gangs per queue in a fresh namespace, then a 4-GPU node, and
		// returns the BindRequests per queue once 4 exist.
		share := func(label string) map[string]int {
			ns := newNamespace(t, ctx, "tbf-"+label)
			cleanupPods(t, ns)
			var pods []string
			queueOf := map[string]string{}
			for _, q := range []string{qa, qb} {
				for i := 0; i < 4; i++ {
					for _, p := range createGang(t, ctx, ns, fmt.Sprintf("%s-%d", q, i), q, 1, 1, 1) {
						pods = append(pods, p)
						queueOf[p] = q
					}
				}
			}
			time.Sleep(time.Second) // cycles without a node: nothing can be placed
			node := "tbf-" + label + "-" + id
			if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: node, GPUs: 4}); err != nil {
				t.Fatalf("create node %s: %v", node, err)
			}
			defer admin.Kube.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
			var got map[string]int
			err := harness.Poll(ctx, 60*time.Second, "4 BindRequests in "+ns, func(ctx context.Context) (bool, error) {
				items, err := bindRequests(ctx, ns)
				if err != nil {
					return false, err
				}
				got = map[string]int{}
				for _, br := range items {
					pod, _, _ := unstructured.NestedString(br.Object, "spec", "podName")
					got[queueOf[pod]]++
				}
				return len(items) >= 4, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// The node is full: nothing more may come.
			time.Sleep(time.Second)
			items, _ := bindRequests(ctx, ns)
			if len(items) != 4 {
				t.Errorf("%d BindRequests on a 4-GPU node", len(items))
			}
			freeNamespace(t, ctx, ns)
			return got
		}
		return sched, share
	}

	t.Run("kValue1", func(t *testing.T) {
		_, share := run(t, "1", "5m")
		got := share("k1")
		if got[qa] != 1 || got[qb] != 3 {
			t.Errorf("BindRequests per queue %v, want %s: 1, %s: 3 (usage A 0.75, B 0)", got, qa, qb)
		}
	})
	t.Run("kValue0", func(t *testing.T) {
		_, share := run(t, "0", "5m")
		got := share("k0")
		if got[qa] != 2 || got[qb] != 2 {
			t.Errorf("BindRequests per queue %v, want 2 and 2 (kValue 0: usage ignored)", got)
		}
	})
	t.Run("PrometheusStopped", func(t *testing.T) {
		sched, share := run(t, "1", "8s")
		if got := share("before"); got[qa] != 1 || got[qb] != 3 {
			t.Errorf("before Prometheus stops: BindRequests per queue %v, want 1 and 3", got)
		}
		prom.stop()
		// Within the staleness period the last usage still holds.
		if got := share("stopping"); got[qa] != 1 || got[qb] != 3 {
			t.Errorf("right after Prometheus stopped: BindRequests per queue %v, want 1 and 3 (last usage)", got)
		}
		err := harness.Poll(ctx, 30*time.Second, "the scheduler logging stale usage", func(ctx context.Context) (bool, error) {
			return strings.Contains(sched.output(), "usage data is stale"), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := share("stale"); got[qa] != 2 || got[qb] != 2 {
			t.Errorf("after the staleness period: BindRequests per queue %v, want 2 and 2 (no usage)", got)
		}
		if n := strings.Count(sched.output(), "usage data is stale"); n != 1 {
			t.Errorf("stale usage logged %d times, want once; output:\n%s", n, sched.output())
		}
		if n := strings.Count(sched.output(), "failed to fetch usage data"); n != 1 {
			t.Errorf("fetch failures logged %d times, want once", n)
		}
	})
}

// freeNamespace deletes a namespace's pods and BindRequests (no controller-manager or binder runs
// here), so the node's GPUs are free for the next round.
func freeNamespace(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	zero := int64(0)
	left := ""
	admin.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	err := harness.Poll(ctx, 30*time.Second, "pods and BindRequests of "+ns+" gone", func(ctx context.Context) (bool, error) {
		// A cycle that started before the pods went may still write a BindRequest: delete again.
		admin.Dynamic.Resource(bindRequestGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		pods, err := admin.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		brs, err := bindRequests(ctx, ns)
		left = fmt.Sprintf("%d pods, %d BindRequests left", len(pods.Items), len(brs))
		return err == nil && len(pods.Items) == 0 && len(brs) == 0, err
	})
	if err != nil {
		t.Fatalf("%v (%s)", err, left)
	}
	// One scheduler period for the cache to see the deletions.
	time.Sleep(500 * time.Millisecond)
}

func schedulerConfigWithUsage(promURL, kValue, staleness string) string {
	return fmt.Sprintf(`actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: proportion
    arguments: {kValue: "%s"}
  - name: priority
  - name: elastic
  - name: nodeavailability
  - name: resourcetype
  - name: subgrouporder
  - name: taskorder
  - name: nodeplacement
    arguments: {gpu: binpack, cpu: binpack}
usageDBConfig:
  clientType: prometheus
  connectionString: %s
  usageParams:
    windowSize: 10m
    windowType: sliding
    fetchInterval: 1s
    stalenessPeriod: %s
    waitTimeout: 20s
    extraParams: {queryResolution: 1s, usageQueryTimeout: 2s}
`, kValue, promURL, staleness)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startExporter serves the metrics Prometheus scrapes: queue A holds 3 GPUs, B none; the
// cluster has 4 GPUs, 16 cores and 64 GB.
func startExporter(t *testing.T, qa, qb string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`# TYPE kai_queue_allocated_gpus gauge
kai_queue_allocated_gpus{queue_name=%[1]q} 3
kai_queue_allocated_gpus{queue_name=%[2]q} 0
# TYPE kai_queue_allocated_cpu_cores gauge
kai_queue_allocated_cpu_cores{queue_name=%[1]q} 0
kai_queue_allocated_cpu_cores{queue_name=%[2]q} 0
# TYPE kai_queue_allocated_memory_bytes gauge
kai_queue_allocated_memory_bytes{queue_name=%[1]q} 0
kai_queue_allocated_memory_bytes{queue_name=%[2]q} 0
# TYPE kube_node_status_capacity gauge
kube_node_status_capacity{node="n",resource="nvidia_com_gpu"} 4
kube_node_status_capacity{node="n",resource="cpu"} 16
kube_node_status_capacity{node="n",resource="memory"} 6.4e+10
`, qa, qb)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

type promProcess struct {
	url  string
	cmd  *exec.Cmd
	once sync.Once
	done chan error
}

func (p *promProcess) stop() {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// startPrometheus runs Prometheus on a free loopback port, scraping `target` every second.
func startPrometheus(t *testing.T, bin, target string) *promProcess {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	writeFile(t, cfg, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: queues
  static_configs: [{targets: [%q]}]
`, target))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &promProcess{url: "http://" + addr, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop()
		logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", out)
		}
	})
	return p
}

// waitPromData waits until `series` has at least `samples` samples in Prometheus.
func waitPromData(t *testing.T, ctx context.Context, promURL, series string, samples int) {
	t.Helper()
	q := fmt.Sprintf("count_over_time(%s[10m])", series)
	err := harness.Poll(ctx, 60*time.Second, "Prometheus holding "+series, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return false, nil // not up yet
		}
		defer resp.Body.Close()
		var answer struct {
			Data struct {
				Result []struct {
					Value []interface{} `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
			return false, nil
		}
		if len(answer.Data.Result) == 0 || len(answer.Data.Result[0].Value) != 2 {
			return false, nil
		}
		var n int
		fmt.Sscanf(fmt.Sprint(answer.Data.Result[0].Value[1]), "%d", &n)
		return n >= samples, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
