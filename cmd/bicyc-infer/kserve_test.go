package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "sigs.k8s.io/yaml"
)

// KServe's Go module is not served by the Go module proxy, so the KServe
// manifests are decoded strictly into these types, written from KServe's
// published CRDs and API types (serving.kserve.io v1alpha1
// ClusterServingRuntime, v1beta1 InferenceService; the fields bicyc uses,
// with the Kubernetes API's own corev1.Container for the container):
// an unknown or mistyped field is an error.
type kserveRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SupportedModelFormats []struct {
			Name       string `json:"name"`
			Version    string `json:"version,omitempty"`
			AutoSelect *bool  `json:"autoSelect,omitempty"`
			Priority   *int32 `json:"priority,omitempty"`
		} `json:"supportedModelFormats"`
		ProtocolVersions []string           `json:"protocolVersions"`
		Containers       []corev1.Container `json:"containers"`
	} `json:"spec"`
}

type kserveInferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Predictor struct {
			Model struct {
				ModelFormat struct {
					Name    string `json:"name"`
					Version string `json:"version,omitempty"`
				} `json:"modelFormat"`
				Runtime         string `json:"runtime,omitempty"`
				ProtocolVersion string `json:"protocolVersion,omitempty"`
				StorageURI      string `json:"storageUri"`
			} `json:"model"`
		} `json:"predictor"`
	} `json:"spec"`
}

// TestKServeManifests decodes deploy/kserve strictly and checks what KServe
// and bicyc-infer need of them: the runtime serves model format bicyc over
// the v2 protocol, runs bicyc-infer serve on the model KServe's storage
// initializer puts at /mnt/models, listens where its port and probes say,
// runs as the image's non-root user, and the InferenceService names it.
func TestKServeManifests(t *testing.T) {
	read := func(name string, v any) {
		b, err := os.ReadFile("../../deploy/kserve/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k8syaml.UnmarshalStrict(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var rt kserveRuntime
	read("clusterservingruntime.yaml", &rt)
	if rt.APIVersion != "serving.kserve.io/v1alpha1" || rt.Kind != "ClusterServingRuntime" || rt.Name != "bicyc" {
		t.Errorf("runtime %s %s %s", rt.APIVersion, rt.Kind, rt.Name)
	}
	if f := rt.Spec.SupportedModelFormats; len(f) != 1 || f[0].Name != "bicyc" {
		t.Errorf("model formats %+v", f)
	}
	if !slices.Contains(rt.Spec.ProtocolVersions, "v2") || !slices.Contains(rt.Spec.ProtocolVersions, "grpc-v2") {
		t.Errorf("protocol versions %v", rt.Spec.ProtocolVersions)
	}
	if len(rt.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(rt.Spec.Containers))
	}
	c := rt.Spec.Containers[0]
	// KServe finds the model server by this container name.
	if c.Name != "kserve-container" || !slices.Equal(c.Command, []string{"bicyc-infer"}) {
		t.Errorf("container %s, command %v", c.Name, c.Command)
	}
	for _, arg := range []string{"serve", "--model=/mnt/models", "--model-name={{.Name}}", "--addr=:8080", "--grpc-addr=:8001"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "http1" {
		t.Errorf("ports %+v: want http1 on 8080 (Knative routes one port)", c.Ports)
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.ReadinessProbe, "/v2/health/ready"}, {c.LivenessProbe, "/v2/health/live"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.IntValue() != 8080 {
			t.Errorf("probe for %s: %+v", p.path, p.probe)
		}
	}
	if !c.Resources.Limits.Cpu().Equal(*c.Resources.Requests.Cpu()) {
		t.Errorf("CPU limit %s, request %s: want them equal", c.Resources.Limits.Cpu(), c.Resources.Requests.Cpu())
	}
	if s := c.SecurityContext; s == nil || s.RunAsUser == nil || *s.RunAsUser != 10001 || s.RunAsNonRoot == nil || !*s.RunAsNonRoot {
		t.Errorf("security context %+v: want the image's user 10001, non-root", s)
	}

	var isvc kserveInferenceService
	read("inferenceservice.yaml", &isvc)
	m := isvc.Spec.Predictor.Model
	if isvc.APIVersion != "serving.kserve.io/v1beta1" || isvc.Kind != "InferenceService" ||
		m.ModelFormat.Name != "bicyc" || m.Runtime != rt.Name || m.ProtocolVersion != "v2" || !strings.Contains(m.StorageURI, "://") {
		t.Errorf("inference service %+v", isvc)
	}
}

// TestServingDocKServe follows docs/serving.md's KServe commands: the image
// file and reference `make image` writes (the Makefile's defaults), the
// manifests' paths, and the model's name and port in the URL.
func TestServingDocKServe(t *testing.T) {
	md, err := os.ReadFile("../../docs/serving.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(md)[strings.Index(string(md), "\n## KServe\n"):]
	block := section[strings.Index(section, "```\n")+4:]
	block = block[:strings.Index(block, "```")]
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"IMAGE ?= build/image/bicyc.tar", "IMAGE_REF ?= localhost/bicyc:dev"} {
		if !strings.Contains(string(makefile), "\n"+v+"\n") {
			t.Errorf("the Makefile does not set %s", v)
		}
	}
	var rt kserveRuntime
	var isvc kserveInferenceService
	for name, v := range map[string]any{"clusterservingruntime.yaml": &rt, "inferenceservice.yaml": &isvc} {
		b, err := os.ReadFile("../../deploy/kserve/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := k8syaml.UnmarshalStrict(b, v); err != nil {
			t.Fatal(err)
		}
	}
	var applied []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "kubectl" && f[1] == "apply" && f[2] == "-f":
			if _, err := os.Stat("../../" + f[3]); err != nil {
				t.Errorf("%s: %v", line, err)
			}
			applied = append(applied, f[3])
		case len(f) == 4 && f[0] == "podman" && f[1] == "load":
			if f[3] != "build/image/bicyc.tar" {
				t.Errorf("%s: make image writes build/image/bicyc.tar", line)
			}
		case len(f) == 4 && f[0] == "podman" && f[1] == "tag":
			if f[2] != "localhost/bicyc:dev" || f[3] != rt.Spec.Containers[0].Image {
				t.Errorf("%s: want localhost/bicyc:dev tagged as the runtime's image %s", line, rt.Spec.Containers[0].Image)
			}
		case len(f) == 4 && f[0] == "kubectl" && f[1] == "get":
			if f[2] != "inferenceservice" || f[3] != isvc.Name {
				t.Errorf("%s: the InferenceService is %s", line, isvc.Name)
			}
		case len(f) == 3 && f[0] == "curl":
			if !strings.HasSuffix(f[2], "/v2/models/"+isvc.Name) {
				t.Errorf("%s: the model is served as %s", line, isvc.Name)
			}
		}
	}
	if !slices.Equal(applied, []string{"deploy/kserve/clusterservingruntime.yaml", "deploy/kserve/inferenceservice.yaml"}) {
		t.Errorf("applied %v: want the runtime, then the InferenceService", applied)
	}
	if !strings.Contains(section, "REST on port 8080 (`--addr=:8080`") || !strings.Contains(section, "gRPC on 8001 (`--grpc-addr=:8001`") {
		t.Error("docs/serving.md's KServe section does not give the runtime's ports as its arguments set them")
	}
}
