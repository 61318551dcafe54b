package sweep

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/lockfile"
)

// KubernetesDir is the directory of a sweep that holds its manifests.
const KubernetesDir = "k8s"

// Kubernetes are the settings of the manifests a sweep writes
// (WriteKubernetes).
type Kubernetes struct {
	// Image is the container image that holds the bicyc binary (on PATH)
	// and whatever the configurations read (the datasets).
	Image string
	// Namespace of every object; "" leaves it to kubectl.
	Namespace string
	// Claim is the PersistentVolumeClaim that holds the sweep directory,
	// mounted at MountPath in every pod; SweepDir is the sweep directory as
	// the pods see it, under MountPath. ClaimSize, if not "", makes
	// WriteKubernetes write the claim too (ReadWriteMany, StorageClass
	// if not "").
	Claim, MountPath, SweepDir, ClaimSize, StorageClass string
	// CPU and Memory are each worker's requests (and memory limit), e.g.
	// "2" and "4Gi"; "" requests none.
	CPU, Memory string
	// Parallelism bounds the pods of a wave running at once; 0 runs them all.
	Parallelism int
	// Lease is the cells' lock lease (`bicyc sweep --lease`): a pod that
	// replaces a lost one takes the cell over after it.
	Lease time.Duration
	// NodeSelector are node labels the pods must run on (key=value).
	NodeSelector map[string]string
	// Tolerations are taints the pods tolerate, each key[=value]:effect
	// (effect NoSchedule, PreferNoSchedule or NoExecute; without a value
	// the taint's key alone matches).
	Tolerations []string
	// GPUs is each worker's nvidia.com/gpu limit; 0 requests none.
	GPUs int
}

// JobTTL is how long a finished Job (and its pods' logs) stays before
// Kubernetes deletes it (ttlSecondsAfterFinished).
const JobTTL = 7 * 24 * time.Hour

// tolerationEffects are the taint effects Kubernetes knows.
var tolerationEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// parseToleration reads key[=value]:effect.
func parseToleration(t string) (k8sToleration, error) {
	kv, effect, ok := strings.Cut(t, ":")
	key, value, hasValue := strings.Cut(kv, "=")
	if !ok || key == "" || !slices.Contains(tolerationEffects, effect) {
		return k8sToleration{}, fmt.Errorf("toleration %q: want key[=value]:effect, effect one of %s", t, strings.Join(tolerationEffects, ", "))
	}
	tol := k8sToleration{Key: key, Operator: "Exists", Effect: effect}
	if hasValue {
		tol.Operator, tol.Value = "Equal", value
	}
	return tol, nil
}

// dnsLabel is what Kubernetes accepts as an object name part.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every problem of k at once.
func (k Kubernetes) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("kubernetes: "+format, args...)) }
	if k.Image == "" {
		bad("no container image (--image)")
	}
	if !dnsLabel.MatchString(k.Claim) {
		bad("claim %q is not a valid name (lower-case letters, digits, '-')", k.Claim)
	}
	if k.Namespace != "" && !dnsLabel.MatchString(k.Namespace) {
		bad("namespace %q is not a valid name", k.Namespace)
	}
	if !path.IsAbs(k.MountPath) {
		bad("mount path %q is not absolute", k.MountPath)
	}
	if rel := strings.TrimPrefix(k.SweepDir, k.MountPath); !path.IsAbs(k.SweepDir) || rel == k.SweepDir || (rel != "" && !strings.HasPrefix(rel, "/")) {
		bad("sweep directory %q is not under the mount path %q", k.SweepDir, k.MountPath)
	}
	if k.Parallelism < 0 {
		bad("parallelism %d is negative", k.Parallelism)
	}
	if k.GPUs < 0 {
		bad("--gpus %d is negative", k.GPUs)
	}
	for _, t := range k.Tolerations {
		if _, err := parseToleration(t); err != nil {
			bad("%v", err)
		}
	}
	for key, v := range k.NodeSelector {
		if key == "" || strings.ContainsAny(key+v, " \n\t") {
			bad("node selector %q=%q: want key=value without spaces", key, v)
		}
	}
	return errors.Join(errs...)
}

// The Kubernetes objects WriteKubernetes writes, reduced to the fields it
// sets; names and layout are those of k8s.io/api batch/v1 and core/v1
// (the tests decode the files strictly into those types), kept out of the
// binary, which only writes them.
type (
	k8sMeta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sJobSpec struct {
		CompletionMode          string         `yaml:"completionMode"`
		Completions             int            `yaml:"completions"`
		Parallelism             int            `yaml:"parallelism"`
		BackoffLimit            int            `yaml:"backoffLimit"`
		TTLSecondsAfterFinished int            `yaml:"ttlSecondsAfterFinished"`
		Template                k8sPodTemplate `yaml:"template"`
	}
	k8sPodTemplate struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy string            `yaml:"restartPolicy"`
		NodeSelector  map[string]string `yaml:"nodeSelector,omitempty"`
		Tolerations   []k8sToleration   `yaml:"tolerations,omitempty"`
		Containers    []k8sContainer    `yaml:"containers"`
		Volumes       []k8sVolume       `yaml:"volumes"`
	}
	k8sToleration struct {
		Key      string `yaml:"key"`
		Operator string `yaml:"operator"`
		Value    string `yaml:"value,omitempty"`
		Effect   string `yaml:"effect"`
	}
	k8sContainer struct {
		Name         string           `yaml:"name"`
		Image        string           `yaml:"image"`
		Command      []string         `yaml:"command"`
		Args         []string         `yaml:"args"`
		Env          []k8sEnv         `yaml:"env"`
		Resources    k8sResources     `yaml:"resources,omitempty"`
		VolumeMounts []k8sVolumeMount `yaml:"volumeMounts"`
	}
	k8sEnv struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef,omitempty"`
			ResourceFieldRef *struct {
				Resource string `yaml:"resource"`
			} `yaml:"resourceFieldRef,omitempty"`
		} `yaml:"valueFrom"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests,omitempty"`
		Limits   map[string]string `yaml:"limits,omitempty"`
	}
	k8sVolumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	k8sVolume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	}
	k8sClaim struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
		Spec       struct {
			AccessModes      []string     `yaml:"accessModes"`
			StorageClassName string       `yaml:"storageClassName,omitempty"`
			Resources        k8sResources `yaml:"resources"`
		} `yaml:"spec"`
	}
)

// WriteKubernetes freezes the plan (Plan.Write) and writes into
// <out>/k8s one Indexed Job per wave and a script that applies them:
//
//	claim.yaml     the PersistentVolumeClaim (only with ClaimSize)
//	wave-<k>.yaml  a Job with completionMode Indexed and one completion
//	               per cell of wave k; its pod with completion index i
//	               runs `bicyc sweep --out <SweepDir> --wave k --wave-index i`
//	               (JOB_COMPLETION_INDEX), the i-th cell of the wave
//	apply.sh       kubectl apply of each wave, then a wait until its Job
//	               is complete (the next wave) or failed (it stops, exit
//	               status 1, saying which)
//
// Every pod mounts Claim at MountPath; the sweep directory must be on that
// volume (the one written here, copied there, or written there directly).
func WriteKubernetes(plan *Plan, k Kubernetes) ([]string, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if err := plan.Write(); err != nil {
		return nil, err
	}
	dir := filepath.Join(plan.Spec.Out, KubernetesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := "bicyc-" + k8sName(filepath.Base(plan.Spec.Out))
	labels := map[string]string{"app.kubernetes.io/name": "bicyc", "app.kubernetes.io/instance": base}
	var files []string
	write := func(name string, v any) error {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		files = append(files, filepath.Join(dir, name))
		return durable.WriteFile(filepath.Join(dir, name), b)
	}
	apply := "#!/bin/bash\n# Runs the sweep's waves in order (written by bicyc sweep --emit k8s).\nset -euo pipefail\ncd \"$(dirname \"$0\")\"\n" + waitJob(k.Namespace)
	if k.ClaimSize != "" {
		var c k8sClaim
		c.APIVersion, c.Kind, c.Metadata = "v1", "PersistentVolumeClaim", k8sMeta{Name: k.Claim, Namespace: k.Namespace, Labels: labels}
		c.Spec.AccessModes = []string{"ReadWriteMany"}
		c.Spec.StorageClassName = k.StorageClass
		c.Spec.Resources.Requests = map[string]string{"storage": k.ClaimSize}
		if err := write("claim.yaml", c); err != nil {
			return nil, err
		}
		apply += "kubectl apply -f claim.yaml\n"
	}
	for w, cells := range plan.Waves() {
		job := k.job(fmt.Sprintf("%s-w%d", base, w), labels, w, len(cells))
		name := fmt.Sprintf("wave-%d.yaml", w)
		if err := write(name, job); err != nil {
			return nil, err
		}
		apply += fmt.Sprintf("kubectl apply -f %s\nwait_job %s\n", name, job.Metadata.Name)
	}
	files = append(files, filepath.Join(dir, "apply.sh"))
	return files, durable.WriteFile(filepath.Join(dir, "apply.sh"), []byte(apply))
}

// waitJob is apply.sh's shell function wait_job JOB: it polls the Job's
// conditions until it is complete (returns 0) or failed (returns 1, naming
// where to look), or WAIT_SECONDS (default a day) have passed.
func waitJob(namespace string) string {
	ns := ""
	if namespace != "" {
		ns = " -n " + namespace
	}
	return `wait_job() {
	local deadline=$((SECONDS + ${WAIT_SECONDS:-86400})) conds
	while :; do
		conds=$(kubectl get` + ns + ` "job/$1" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}')
		case " $conds " in
		*" Complete "*) echo "job $1: complete"; return 0 ;;
		*" Failed "*) echo "job $1: failed (kubectl describe` + ns + ` job/$1; bicyc sweep --out <the sweep directory> --status)" >&2; return 1 ;;
		esac
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "job $1: neither complete nor failed after ${WAIT_SECONDS:-86400} s" >&2; return 1
		fi
		sleep "${POLL_SECONDS:-10}"
	done
}
`
}

// job is the Indexed Job of wave w with n cells.
func (k Kubernetes) job(name string, labels map[string]string, w, n int) k8sJob {
	lease := k.Lease
	if lease <= 0 {
		lease = lockfile.DefaultLease
	}
	c := k8sContainer{
		Name: "worker", Image: k.Image, Command: []string{"bicyc"},
		Args: []string{"sweep", "--out", k.SweepDir, "--wave", strconv.Itoa(w),
			"--wave-index", "$(JOB_COMPLETION_INDEX)", "--lease", lease.String(), "--wait-held"},
		VolumeMounts: []k8sVolumeMount{{Name: "sweep", MountPath: k.MountPath}},
	}
	// The Job controller sets this variable too; naming it here makes
	// $(JOB_COMPLETION_INDEX) in args expand on every Kubernetes version.
	var env k8sEnv
	env.Name = "JOB_COMPLETION_INDEX"
	env.ValueFrom.FieldRef = &struct {
		FieldPath string `yaml:"fieldPath"`
	}{"metadata.annotations['batch.kubernetes.io/job-completion-index']"}
	c.Env = []k8sEnv{env}
	if k.CPU != "" || k.Memory != "" {
		c.Resources.Requests = map[string]string{}
	}
	if k.CPU != "" || k.Memory != "" || k.GPUs > 0 {
		c.Resources.Limits = map[string]string{}
	}
	if k.CPU != "" {
		// The limit equals the request, and the training's threads (Go's
		// and OpenBLAS's) come from it, in whole cores rounded up, rather
		// than from the node's cores, which threads: 0 would take.
		c.Resources.Requests["cpu"] = k.CPU
		c.Resources.Limits["cpu"] = k.CPU
		for _, name := range []string{"GOMAXPROCS", "OPENBLAS_NUM_THREADS"} {
			var e k8sEnv
			e.Name = name
			e.ValueFrom.ResourceFieldRef = &struct {
				Resource string `yaml:"resource"`
			}{"limits.cpu"}
			c.Env = append(c.Env, e)
		}
	}
	if k.Memory != "" {
		c.Resources.Requests["memory"] = k.Memory
		c.Resources.Limits["memory"] = k.Memory
	}
	if k.GPUs > 0 {
		c.Resources.Limits["nvidia.com/gpu"] = strconv.Itoa(k.GPUs)
	}
	var tolerations []k8sToleration
	for _, t := range k.Tolerations {
		tol, _ := parseToleration(t) // checked by Validate
		tolerations = append(tolerations, tol)
	}
	var vol k8sVolume
	vol.Name = "sweep"
	vol.PersistentVolumeClaim.ClaimName = k.Claim
	par := k.Parallelism
	if par == 0 || par > n {
		par = n
	}
	return k8sJob{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: name, Namespace: k.Namespace, Labels: labels},
		Spec: k8sJobSpec{
			CompletionMode: "Indexed", Completions: n, Parallelism: par,
			// A cell that fails is retried where it stopped; a failing
			// configuration stops the wave after two tries of each cell.
			BackoffLimit:            2 * n,
			TTLSecondsAfterFinished: int(JobTTL.Seconds()),
			Template: k8sPodTemplate{
				Metadata: k8sMeta{Labels: labels},
				// OnFailure restarts the worker in its pod: its lock is
				// taken over at once (same host and boot, another process).
				Spec: k8sPodSpec{RestartPolicy: "OnFailure", NodeSelector: k.NodeSelector, Tolerations: tolerations,
					Containers: []k8sContainer{c}, Volumes: []k8sVolume{vol}},
			},
		},
	}
}

// k8sName turns s into a DNS label part: lower case, other characters '-'.
func k8sName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	name := strings.Trim(string(b), "-")
	if len(name) > 40 {
		name = strings.Trim(name[:40], "-")
	}
	if name == "" {
		name = "sweep"
	}
	return name
}

// WaveCell returns the index of the i-th cell of wave w, as a Kubernetes
// Indexed Job's completion index i of wave w's Job names it.
func (p *Plan) WaveCell(w, i int) (int, error) {
	waves := p.Waves()
	if w < 0 || w >= len(waves) {
		return 0, fmt.Errorf("sweep %s: no wave %d: the plan has waves 0-%d", p.Spec.Out, w, len(waves)-1)
	}
	if i < 0 || i >= len(waves[w]) {
		return 0, fmt.Errorf("sweep %s: wave %d has cells 0-%d, not %d", p.Spec.Out, w, len(waves[w])-1, i)
	}
	return waves[w][i], nil
}
