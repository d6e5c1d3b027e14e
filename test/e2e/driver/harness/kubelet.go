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

// FakeKubelet plays the kubelet of every node labelled FakeNodeLabel=true: a pod bound to such a
// node is marked Running and Ready (containers started, a pod IP), and a pod being deleted
// gracefully is finished the way a kubelet does once its containers stopped: a delete with grace
// period 0 and a UID precondition. Nothing else (no images, probes, restarts or node heartbeats:
// without a node lifecycle controller nodes stay Ready as created).
type FakeKubelet struct {
	Client kubernetes.Interface
	Log    *log.Logger
}

// Run works until ctx ends.
func (k *FakeKubelet) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(k.Client, 30*time.Second)
	pods := factory.Core().V1().Pods()
	nodes := factory.Core().V1().Nodes()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
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
		err := k.sync(ctx, pods.Lister(), nodes.Lister(), key)
		if err != nil {
			if k.Log != nil {
				k.Log.Printf("pod %s: %v (retrying)", key, err)
			}
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

func (k *FakeKubelet) sync(ctx context.Context, podLister listersv1.PodLister, nodeLister listersv1.NodeLister, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := podLister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	node, err := nodeLister.Get(pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return nil // not (yet) a node; its add event requeues the pod
	}
	if err != nil {
		return err
	}
	if node.Labels[FakeNodeLabel] != "true" {
		return nil
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
			return nil // gone already, or a new pod of the same name
		}
		return err
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		return nil
	}
	running := RunningStatus(pod, node)
	updated := pod.DeepCopy()
	updated.Status = running
	_, err = k.Client.CoreV1().Pods(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	if err == nil && k.Log != nil {
		k.Log.Printf("pod %s: running on %s", key, node.Name)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
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
