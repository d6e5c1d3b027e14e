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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gantry/tests/e2e/driver/harness"
)

// Time-based fairshare with a real Prometheus (the Debian package, started here on loopback)
// scraping `gantry queue-controller`'s /metrics every second, as a KAI cluster's Prometheus
// scrapes KAI's queue-controller. The only other series KAI's usage queries read is
// kube-state-metrics' node capacity; a small stand-in for kube-state-metrics serves it (4 GPUs).
//
// History: queue A runs a 4-GPU job alone (its pods bound by the test, run by the fake kubelet;
// the podgroup-controller and queue-controller turn them into A's allocation) until Prometheus
// holds 60 s of it, then the job ends. From then on A's usage is the share of the window it
// held the GPUs, and B's is 0. The scheduler reads usage from Prometheus through usageDBConfig:
//
//  1. with kValue 1 (the default) B gets the larger share of the next allocations (usage A near
//     0.8 to 0.95, depending on how long the rounds take, B 0: over-quota weights 1 - usage(A) and
//     1, so B gets 3 or all 4 of the 4 GPUs); with kValue 0 they split 2 / 2;
//  2. Prometheus stopped mid-run: the scheduler goes on scheduling, with the last usage until the
//     staleness period, then with none (an even split again), logging each once; it exits cleanly.
func TestTimeBasedFairshare(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus not found (Debian package prometheus; scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	t.Cleanup(cancel)
	id := suffix()
	// Each round creates its pods first and then the node they fit on, so the first cycle that can
	// place anything sees both queues asking.
	exclusiveNodes(t, ctx)
	qa, qb := "tbf-a-"+id, "tbf-b-"+id
	createQueue(t, ctx, qa, 0)
	createQueue(t, ctx, qb, 0)

	startGantry(t, "podgroup-controller", "podgroup-controller",
		"--kubeconfig", env.Kubeconfig(harness.PodGroupControllerUser), "--leader-elect",
		"--namespace-for-leases", harness.Namespace, "--metrics-bind-address", "127.0.0.1:0")
	qc := startGantry(t, "queue-controller", "queue-controller",
		"--kubeconfig", env.Kubeconfig(harness.QueueControllerUser), "--leader-elect",
		"--namespace-for-leases", harness.Namespace, "--metrics-listen-address", "127.0.0.1:0")
	queueMetrics := fmt.Sprintf("127.0.0.1:%d", qc.port(t))
	prom := startPrometheus(t, promBin, queueMetrics, startCapacityExporter(t))
	runHistory(t, ctx, prom.url, qa, id)

	usageOfA := func() float64 {
		return promValue(t, prom.url, fmt.Sprintf(
			`sum(sum_over_time(kai_queue_allocated_gpus{queue_name=%q}[10m])) / `+
				`sum(sum_over_time(kube_node_status_capacity{resource="nvidia_com_gpu"}[10m]))`, qa))
	}

	run := func(t *testing.T, kValue string, staleness string) (*gantryProcess, func(string) map[string]int) {
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
		if got[qb] <= got[qa] || got[qa]+got[qb] != 4 {
			t.Errorf("BindRequests per queue %v, want more for %s than for %s (usage of A now %.2f, B 0)", got, qb, qa, usageOfA())
		}
		t.Logf("kValue 1: BindRequests per queue %v (usage of A %.2f, B 0)", got, usageOfA())
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
		if got := share("before"); got[qb] <= got[qa] || got[qa]+got[qb] != 4 {
			t.Errorf("before Prometheus stops: BindRequests per queue %v, want more for B (usage of A now %.2f)", got, usageOfA())
		}
		prom.stop()
		// Within the staleness period the last usage still holds.
		if got := share("stopping"); got[qb] <= got[qa] || got[qa]+got[qb] != 4 {
			t.Errorf("right after Prometheus stopped: BindRequests per queue %v, want more for B (last usage)", got)
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

// runHistory runs a 4-GPU job of queue `q` alone on a node of its own, its pods bound here and
// run by the fake kubelet (no scheduler runs yet), until Prometheus holds 60 s of the queue at 4
// GPUs (as the controllers report it), then deletes the job and its node and waits for the
// queue-controller to report 0 (or the series to go). Usage is GPU-seconds held over GPU-seconds
// of capacity since Prometheus started: 60 s keeps A's above 0.7 through the last round that
// needs it (the rounds take 3-10 s each).
func runHistory(t *testing.T, ctx context.Context, promURL, q, id string) {
	t.Helper()
	node := "tbf-history-" + id
	if _, err := harness.CreateGPUNode(ctx, admin, harness.GPUNode{Name: node, GPUs: 4}); err != nil {
		t.Fatalf("create node %s: %v", node, err)
	}
	ns := newNamespace(t, ctx, "tbf-history")
	cleanupPods(t, ns)
	createPodGroup(t, ctx, ns, "history", q, 1)
	var pods []string
	for i := 0; i < 4; i++ {
		pod := pendingPod(fmt.Sprintf("history-%d", i), 1)
		pod.Labels["kai.scheduler/queue"] = q
		pod.Annotations = map[string]string{"pod-group-name": "history"}
		pod.Spec.NodeName = node
		if _, err := admin.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod.Name)
	}
	waitRunning(t, ctx, ns, pods)
	held := fmt.Sprintf(`sum_over_time(kai_queue_allocated_gpus{queue_name=%q}[10m])`, q)
	err := harness.Poll(ctx, 3*time.Minute, "60 s of "+q+" at 4 GPUs in Prometheus", func(ctx context.Context) (bool, error) {
		return promValue(t, promURL, held) >= 4*60, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	freeNamespace(t, ctx, ns)
	if err := admin.Kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	now := fmt.Sprintf(`kai_queue_allocated_gpus{queue_name=%q}`, q)
	err = harness.Poll(ctx, 60*time.Second, q+" back at 0 GPUs in Prometheus", func(ctx context.Context) (bool, error) {
		return promValue(t, promURL, now) <= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// promValue is the value of an instant query's first sample (-1 when there is none yet).
func promValue(t *testing.T, promURL, query string) float64 {
	t.Helper()
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return -1
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
		return -1
	}
	if len(answer.Data.Result) == 0 || len(answer.Data.Result[0].Value) != 2 {
		return -1
	}
	var v float64
	if _, err := fmt.Sscanf(fmt.Sprint(answer.Data.Result[0].Value[1]), "%g", &v); err != nil {
		return -1
	}
	return v
}

// startCapacityExporter stands in for kube-state-metrics, which KAI's usage queries read the
// cluster's capacity from: 4 GPUs, 16 cores and 64 GB (the share rounds' node).
func startCapacityExporter(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := `# TYPE kube_node_status_capacity gauge
kube_node_status_capacity{node="n",resource="nvidia_com_gpu"} 4
kube_node_status_capacity{node="n",resource="cpu"} 16
kube_node_status_capacity{node="n",resource="memory"} 6.4e+10
`
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

// startPrometheus runs Prometheus on a free loopback port, scraping `targets` every second.
func startPrometheus(t *testing.T, bin string, targets ...string) *promProcess {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	writeFile(t, cfg, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
- job_name: queues
  static_configs: [{targets: [%s]}]
`, quoteAll(targets)))
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

// quoteAll is `items` as a YAML flow list's elements ("a", "b").
func quoteAll(items []string) string {
	quoted := make([]string, len(items))
	for i, item := range items {
		quoted[i] = strconv.Quote(item)
	}
	return strings.Join(quoted, ", ")
}
