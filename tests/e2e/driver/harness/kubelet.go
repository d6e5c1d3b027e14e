package harness

import (
	"context"
	"fmt"
	"hash/fnv"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Annotations a test puts on a pod to have it finish: after RunForAnnotation (a duration such as
// "2s") of running, the pod's containers exit with ExitCodeAnnotation (default 0): the pod becomes
// Succeeded, or Failed for a non-zero code.
const (
	RunForAnnotation   = "gantry-e2e/run-for"
	ExitCodeAnnotation = "gantry-e2e/exit-code"
)

// FakeKubelet plays the kubelet of every node labelled FakeNodeLabel=true: a pod bound to such a
// node is marked Running and Ready (containers started, a pod IP); a pod annotated with
// RunForAnnotation completes after that long; and a pod being deleted gracefully is finished the
// way a kubelet does once its containers stopped: a delete with grace period 0 and a UID
// precondition. Nothing else (no images, probes, restarts or node heartbeats: without a node
// lifecycle controller nodes stay Ready as created).
type FakeKubelet struct {
	Client kubernetes.Interface
	Log    *log.Logger
}

// Run works until ctx ends.
func (k *FakeKubelet) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(k.Client, 30*time.Second)
	pods := factory.Core().V1().Pods()
	nodes := factory.Core().V1().Nodes()
	// Retries back off from 5 ms to at most 1 s: client-go's default limiter grows to 1,000 s, so a
	// pod whose status writes failed through a kube-apiserver restart (refused, then 403 until
	// its caches load) could wait past a test's deadline before it is marked Running.
	queue := workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second))
	defer queue.ShutDown()
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}); err != nil {
		return err
	}
	// A node that appears later (or gets the label) makes its pods eligible: requeue them.
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			node := obj.(*corev1.Node)
			all, _ := pods.Lister().List(labels.Everything())
			for _, p := range all {
				if p.Spec.NodeName == node.Name {
					enqueue(p)
				}
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("fake kubelet: cache of %v did not sync", typ)
		}
	}
	if k.Log != nil {
		k.Log.Printf("fake kubelet synced")
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		key, quit := queue.Get()
		if quit {
			return nil
		}
		after, err := k.sync(ctx, pods.Lister(), nodes.Lister(), key)
		switch {
		case err != nil:
			if k.Log != nil {
				k.Log.Printf("pod %s: %v (retrying)", key, err)
			}
			queue.AddRateLimited(key)
		case after > 0:
			queue.Forget(key)
			queue.AddAfter(key, after)
		default:
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// sync brings one pod a step further; a positive duration asks to look again after it.
func (k *FakeKubelet) sync(ctx context.Context, podLister listersv1.PodLister, nodeLister listersv1.NodeLister, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pod.Spec.NodeName == "" {
		return 0, nil
	}
	node, err := nodeLister.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return 0, nil // not (yet) a node; its add event requeues the pod
	}
	if err != nil {
		return 0, err
	}
	if node.Labels[FakeNodeLabel] != "true" {
		return 0, nil
	}
	if pod.DeletionTimestamp != nil {
		zero := int64(0)
		uid := pod.UID
		err := k.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil && k.Log != nil {
			k.Log.Printf("pod %s: containers stopped, deleted", key)
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return 0, nil // gone already, or a new pod of the same name
		}
		return 0, err
	}
	if pod.Status.Phase == corev1.PodRunning {
		return k.finish(ctx, pod, key)
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		return 0, nil
	}
	running := RunningStatus(pod, node)
	updated := pod.DeepCopy()
	updated.Status = running
	_, err = k.Client.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	if err == nil && k.Log != nil {
		k.Log.Printf("pod %s: running on %s", key, node.Name)
	}
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err // (the update event brings the pod back, Running, for finish)
}

// finish completes a running pod whose RunForAnnotation time is up, or says when to look again.
func (k *FakeKubelet) finish(ctx context.Context, pod *corev1.Pod, key string) (time.Duration, error) {
	runFor, ok := pod.Annotations[RunForAnnotation]
	if !ok || pod.Status.StartTime == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(runFor)
	if err != nil {
		if k.Log != nil {
			k.Log.Printf("pod %s: bad %s %q: %v", key, RunForAnnotation, runFor, err)
		}
		return 0, nil
	}
	if left := time.Until(pod.Status.StartTime.Add(d)); left > 0 {
		return left, nil
	}
	code := int32(0)
	if s := pod.Annotations[ExitCodeAnnotation]; s != "" {
		var c int
		if _, err := fmt.Sscanf(s, "%d", &c); err == nil {
			code = int32(c)
		}
	}
	updated := pod.DeepCopy()
	updated.Status = CompletedStatus(pod, code)
	_, err = k.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	if err == nil && k.Log != nil {
		k.Log.Printf("pod %s: %s (exit code %d)", key, updated.Status.Phase, code)
	}
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}

// RunningStatus is the status a kubelet reports once a pod's containers all started.
func RunningStatus(pod *corev1.Pod, node *corev1.Node) corev1.PodStatus {
	now := metav1.Now()
	h := fnv.New32a()
	h.Write([]byte(pod.Namespace + "/" + pod.Name))
	sum := h.Sum32()
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+(sum>>16)%64, (sum>>8)%256, 1+sum%254)
	hostIP := "127.0.0.1"
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			hostIP = a.Address
		}
	}
	status := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: &now,
		QOSClass:  pod.Status.QOSClass,
		// Written before the pod runs and kept by the kubelet, which reads them: the claims made
		// for the pod (DRA; its DRA-backed extended resources, KEP-5004).
		ResourceClaimStatuses:       pod.Status.ResourceClaimStatuses,
		ExtendedResourceClaimStatus: pod.Status.ExtendedResourceClaimStatus,
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady} {
		status.Conditions = append(status.Conditions, corev1.PodCondition{
			Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	// Keep conditions other components wrote (a scheduler's, say) that the kubelet does not own.
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
		default:
			status.Conditions = append(status.Conditions, c)
		}
	}
	started := true
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			ImageID:      "fake://" + c.Image,
			ContainerID:  fmt.Sprintf("fake://%s-%s", pod.UID, c.Name),
			Ready:        true,
			Started:      &started,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			RestartCount: 0,
		})
	}
	return status
}

// CompletedStatus is a running pod's status once every container exited with code.
func CompletedStatus(pod *corev1.Pod, code int32) corev1.PodStatus {
	now := metav1.Now()
	status := *pod.Status.DeepCopy()
	status.Phase = corev1.PodSucceeded
	reason := "Completed"
	if code != 0 {
		status.Phase = corev1.PodFailed
		reason = "Error"
	}
	for i, c := range status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			status.Conditions[i].Status = corev1.ConditionFalse
			status.Conditions[i].Reason = "PodCompleted"
			status.Conditions[i].LastTransitionTime = now
		}
	}
	for i, c := range status.ContainerStatuses {
		started := metav1.Now()
		if c.State.Running != nil {
			started = c.State.Running.StartedAt
		}
		status.ContainerStatuses[i].Ready = false
		status.ContainerStatuses[i].Started = new(bool)
		status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now, ContainerID: c.ContainerID}}
	}
	return status
}
