# bicyc: the two commands of the README are `make train` and `make test`;
# both run the idempotent setup first (Debian packages, ONNX Runtime, Go modules).

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# gorgonia's BLAS is OpenBLAS through gonum's netlib bindings (cgo).
export CGO_LDFLAGS := -lopenblas
CONFIG ?= configs/fmnist-t5.yaml

.PHONY: setup setup-gpu build train test test-slurm bench vet image test-image

setup:
	bash scripts/setup.sh

# ONNX Runtime's CUDA and TensorRT providers for bicyc-infer (docs/gpu.md);
# never part of test's setup.
setup-gpu: setup
	bash scripts/setup-gpu.sh

build: setup
	$(GO) build -o bin/ ./cmd/...

# The main job: the default Fashion-MNIST 5-task stream, then ONNX export.
train: build
	bin/bicyc train --config $(CONFIG)

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }

# The test command: setup, format and vet checks, a sweep on a real Slurm
# (test-slurm), the whole suite, the race
# detector on the inference and serving packages, and a short fixed-time run of every
# fuzz target (FUZZTIME per target).
FUZZTIME ?= 5s
test: setup vet test-slurm
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 10m ./infer/... ./serve/...
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz.sh

# The training side again on kernels other than the automatic choice, so that
# no verdict hinges on one kernel set's rounding: OpenBLAS's oldest x86-64
# kernels (Prescott, which Debian's OpenBLAS falls back to on processors it does
# not know), the portable Go element-wise kernels (-tags purego) in place of
# the assembly, and, on a processor with AVX-512, the AVX2 assembly in place of
# the AVX-512 kernels the suite runs there (BICYC_VECTOR=avx2). .ci/run runs it
# after `make test`.
TRAIN_PKGS = ./kernels ./models/... ./gpu/... ./train ./pretrained ./gauss ./cmd/bicyc ./report ./sweep ./bench/... ./reliability
.PHONY: test-kernels
test-kernels: setup
	OPENBLAS_CORETYPE=Prescott $(GO) test -count=1 -timeout 30m $(TRAIN_PKGS)
	$(GO) test -count=1 -tags purego -timeout 30m $(TRAIN_PKGS)
	if grep -qw avx512f /proc/cpuinfo; then BICYC_VECTOR=avx2 $(GO) test -count=1 -timeout 30m $(TRAIN_PKGS); fi

# A sweep submitted to a real one-node Slurm cluster that scripts/slurm-local.sh
# installs (slurm-wlm, munge; needs root), starts and stops (docs/cluster.md).
test-slurm: setup
	bash scripts/slurm-local.sh run -- $(GO) test -count=1 -timeout 15m -run 'TestSweep(Failures)?OnSlurm' ./cmd/bicyc/ -slurm

# The container image (docs/cluster.md): bicyc, bicyc-infer, ONNX Runtime, the
# libraries they load, CA certificates and Fashion-MNIST, FROM scratch, as one
# OCI layout / docker-archive tar built by deploy/image without a container
# engine. The same commit gives the same bytes (-trimpath, file times from the
# commit). test-image checks that, then loads it into podman, trains inside it
# and compares its served answers with this machine's; .ci/run runs it.
IMAGE ?= build/image/bicyc.tar
IMAGE_REF ?= localhost/bicyc:dev
IMAGE_EPOCH = $(shell git log -1 --format=%ct)
image: setup
	$(GO) build -trimpath -o build/image/bin/ ./cmd/bicyc ./cmd/bicyc-infer
	$(GO) run ./deploy/image --bin build/image/bin --ref $(IMAGE_REF) --epoch $(IMAGE_EPOCH) \
		--revision $$(git rev-parse HEAD) $(if $(IMAGE_GPU_DIR),--gpu-dir $(IMAGE_GPU_DIR)) --out $(IMAGE)
	@ls -l $(IMAGE)

# The same archive with a second reference, $(IMAGE_REF)-gpu: one more layer
# with ONNX Runtime's CUDA and TensorRT providers (make setup-gpu, docs/gpu.md).
.PHONY: image-gpu
image-gpu: setup-gpu
	$(MAKE) image IMAGE_GPU_DIR=/usr/local/lib/bicyc/gpu

test-image: image
	bash scripts/setup-image.sh
	$(GO) test -count=1 -timeout 10m -run 'TestImage' ./deploy/image/ \
		-image $(abspath $(IMAGE)) -ref $(IMAGE_REF) -bin $(abspath build/image/bin) -epoch $(IMAGE_EPOCH)

bench: setup
	$(GO) test -run '^$$' -bench . -benchtime 20x ./models/...

# Side-by-side benchmarks against PyTorch (bench/README.md). Each installs
# python3-torch itself (bench/install-torch.sh); PyTorch is never a runtime
# dependency. bench-infer trains a quick model first if BENCH_MODEL is missing.
.PHONY: bench-infer bench-train bench-pretrained
BENCH_RUNS ?= /tmp/bicyc-bench
BENCH_MODEL ?= $(BENCH_RUNS)/m/model
BENCH_ARGS ?=

bench-infer: build
	bash bench/install-torch.sh
	test -d $(BENCH_MODEL) || bin/bicyc train --quick --run-dir $(BENCH_RUNS) --name m
	$(GO) run ./bench/infer --model $(BENCH_MODEL) --bin bin/bicyc-infer $(BENCH_ARGS)

bench-train: setup
	bash bench/install-torch.sh
	$(GO) run ./bench/train $(BENCH_ARGS)

# Every benchmark once at its smallest size, so that none rots unnoticed:
# each must run to the end and pass its own parity check against PyTorch
# (bench/train: step 1's loss terms; bench/infer: top-k distances on the
# tests' small model), its speed is not checked. .ci/run runs it after
# test-kernels; bench/README.md lists the seconds each step adds.
.PHONY: bench-smoke
bench-smoke: setup
	bash bench/install-torch.sh
	$(GO) run ./bench/train --models convnet --rounds 1 --convnet-steps 1 --ceiling-size 0
	$(GO) run ./bench/infer --rounds 1 --calls 20 --batch 16 --reps 1 --procs 1
	$(GO) test -count=1 -run TestTinyExperiment ./bench/openset -openset
	$(GO) run ./bench/serve -requests 20 -warmup 5
	bash scripts/gpu/pack-bench.sh
	OUT=$$(mktemp -d) BICYC_BENCH_PYTHON=/usr/bin/python3 SMOKE=1 bash scripts/gpu/check-bench.sh

# The full-size pretrained-import check: a torchvision ResNet-18 with random
# weights and BatchNorm statistics, exported by python3-torch, imported into
# the gorgonia backbone; its pooled features must match ONNX Runtime on the
# file and on bicyc's own export at 224x224 (max |diff| <= 1e-4).
BENCH_RESNET18 ?= $(BENCH_RUNS)/resnet18.onnx
bench-pretrained: setup
	bash bench/install-torch.sh
	mkdir -p $(dir $(BENCH_RESNET18))
	/usr/bin/python3 pretrained/testdata/make_resnet18.py --full $(BENCH_RESNET18)
	$(GO) test -count=1 -v -run TestFullResNet18MatchesOnnxRuntime ./pretrained/ -resnet18-onnx $(BENCH_RESNET18)
