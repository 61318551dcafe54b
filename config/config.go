package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/names"
)

// Config is the complete configuration of a training run. Each field's
// `doc` tag is its documentation; Default gives the defaults.
type Config struct {
	Seed    int64  `mapstructure:"seed" yaml:"seed" doc:"Seed of every class-independent random choice: initialisation, shuffling, augmentation, transport samples."`
	Method  Method `mapstructure:"method" yaml:"method" doc:"Continual-learning method: bicyc (bidirectional cycle-consistent adapter), adagauss (one-way distiller, adapter learned after the task) or finetune (no distillation, no transport: the lower bound)."`
	RunDir  string `mapstructure:"run_dir" yaml:"run_dir" doc:"Directory under which each run gets its own folder."`
	RunName string `mapstructure:"run_name" yaml:"run_name" doc:"Name of the run folder, one folder name inside run_dir (no / or \\, not . or .., no control characters, no leading or trailing space); empty means <config name>-<method>-s<seed>."`
	Threads int    `mapstructure:"threads" yaml:"threads" doc:"CPU threads for training kernels; 0 means all cores."`
	Quick   bool   `mapstructure:"quick" yaml:"quick" doc:"Quick profile for demos and CI: the quick_profile.* values replace the keys they name (data.train_per_class, data.test_per_class, train.epochs_first, train.epochs, adapter.transport_samples, adapter.epochs, train.rotation, train.min_steps_first, adapter.min_steps) over the config file; setting one of those with --set or a BICYC_* variable as well is refused, naming the quick_profile.* key to set instead."`

	Data       Data                    `mapstructure:"data" yaml:"data"`
	Stream     Stream                  `mapstructure:"stream" yaml:"stream"`
	Model      Model                   `mapstructure:"model" yaml:"model"`
	Train      Train                   `mapstructure:"train" yaml:"train"`
	Loss       Loss                    `mapstructure:"loss" yaml:"loss"`
	Adapter    Adapter                 `mapstructure:"adapter" yaml:"adapter"`
	Anchors    Anchors                 `mapstructure:"anchors" yaml:"anchors"`
	Classifier gauss.ClassifierOptions `mapstructure:"classifier" yaml:"classifier"`
	Eval       Eval                    `mapstructure:"eval" yaml:"eval"`
	Export     Export                  `mapstructure:"export" yaml:"export"`
	QuickSet   Quick                   `mapstructure:"quick_profile" yaml:"quick_profile"`
}

// Method is a continual-learning method, the value of the key method.
type Method string

// The methods bicyc trains (docs/method.md, "Stage I" and "Baselines").
const (
	// MethodBicyc is BiCyc: distiller and adapter trained jointly with the
	// bidirectional, cycle and pairwise losses, then old prototypes
	// transported through the adapter.
	MethodBicyc Method = "bicyc"
	// MethodAdaGauss is the one-way baseline: a distiller in Stage I, an
	// adapter learned after the task, then transport.
	MethodAdaGauss Method = "adagauss"
	// MethodFinetune is the lower bound: no distillation, no transport.
	MethodFinetune Method = "finetune"
)

// Methods returns every method, in the order of the documentation.
func Methods() []Method { return []Method{MethodBicyc, MethodAdaGauss, MethodFinetune} }

// maxEnsemble bounds adapter.ensemble: every member is one more adapter
// training per task.
const maxEnsemble = 32

// Data selects the dataset, its preprocessing and its augmentation.
type Data struct {
	Kind              string          `mapstructure:"kind" yaml:"kind" doc:"Dataset format: fashion-mnist, mnist, cifar10, cifar100 or imagefolder."`
	Dir               string          `mapstructure:"dir" yaml:"dir" doc:"Directory holding the dataset files (IDX or CIFAR binary)."`
	TrainDir          string          `mapstructure:"train_dir" yaml:"train_dir" doc:"imagefolder only: root of the training images, one sub-folder per class."`
	TestDir           string          `mapstructure:"test_dir" yaml:"test_dir" doc:"imagefolder only: root of the test images, same class folders as train_dir."`
	Channels          int             `mapstructure:"channels" yaml:"channels" doc:"Image channels the network sees (1 gray, 3 RGB); imagefolder converts to it."`
	Height            int             `mapstructure:"height" yaml:"height" doc:"Image height the network sees; imagefolder converts to it as data.resize_mode says."`
	Width             int             `mapstructure:"width" yaml:"width" doc:"Image width the network sees; imagefolder converts to it as data.resize_mode says."`
	ResizeMode        arch.ResizeMode `mapstructure:"resize_mode" yaml:"resize_mode" doc:"How an image of another size becomes height x width, at test time, in the exported model and for image folders: squash (resize the whole image, aspect ratio lost; images already of the size pass unchanged) or center-crop (resize the shorter side to max(height, width)/center_crop_ratio, then crop the centre, as torchvision's Resize + CenterCrop)."`
	CenterCropRatio   float64         `mapstructure:"center_crop_ratio" yaml:"center_crop_ratio" doc:"center-crop only: the crop's share of the resized shorter side; the shorter side is resized to floor(max(height, width)/ratio): 0.875 gives torchvision's ImageNet evaluation (256, then 224), 1 crops the whole shorter side."`
	LoadSize          int             `mapstructure:"load_size" yaml:"load_size" doc:"imagefolder with random_resized_crop: shorter side of the training images kept in memory to crop from (about 3*load_size^2*aspect bytes each, at most twice as long as wide); 0 means the center-crop resize size (max(height, width) with squash)."`
	RandomResizedCrop bool            `mapstructure:"random_resized_crop" yaml:"random_resized_crop" doc:"Training augmentation: torchvision's RandomResizedCrop to height x width (10 attempts, then the centre crop), cut from the image at load resolution (imagefolder) or from the stored image; replaces crop_padding, which must be 0."`
	ResizedCropScale  []float64       `mapstructure:"resized_crop_scale" yaml:"resized_crop_scale" doc:"random_resized_crop: range of the crop's fraction of the image area (torchvision: 0.08 to 1)."`
	ResizedCropRatio  []float64       `mapstructure:"resized_crop_ratio" yaml:"resized_crop_ratio" doc:"random_resized_crop: range of the crop's aspect ratio width/height, sampled log-uniformly (torchvision: 3/4 to 4/3)."`
	Mean              []float64       `mapstructure:"mean" yaml:"mean" doc:"Per-channel normalisation mean (of pixel/255); empty means the dataset's standard value."`
	Std               []float64       `mapstructure:"std" yaml:"std" doc:"Per-channel normalisation standard deviation; empty means the dataset's standard value."`
	CropPadding       int             `mapstructure:"crop_padding" yaml:"crop_padding" doc:"Training augmentation: random crop back to full size after zero padding by this many pixels; 0 turns it off."`
	HorizontalFlip    bool            `mapstructure:"horizontal_flip" yaml:"horizontal_flip" doc:"Training augmentation: random horizontal flip; also adds flipped copies to new-class statistics."`
	TrivialAugment    bool            `mapstructure:"trivial_augment" yaml:"trivial_augment" doc:"Training augmentation: TrivialAugmentWide after crop and flip, as torchvision's (31 magnitude bins, nearest, fill 0) on uint8 tensors (docs/method.md, Augmentation); needs 1 or 3 channels."`
	TrainPerClass     int             `mapstructure:"train_per_class" yaml:"train_per_class" doc:"Use at most this many training images per class (first ones in file order); 0 means all."`
	TestPerClass      int             `mapstructure:"test_per_class" yaml:"test_per_class" doc:"Use at most this many test images per class; 0 means all."`
	SkipUnreadable    bool            `mapstructure:"skip_unreadable" yaml:"skip_unreadable" doc:"imagefolder (train, learn): leave out the images that do not decode, naming each in the run log, and train on the rest; false (default) checks every image first and refuses the folder, naming every unreadable file (the first 20, then a count). A class left without images is refused either way."`
	ValPerClass       int             `mapstructure:"val_per_class" yaml:"val_per_class" doc:"Validation split: this many training images of every class, drawn with the run's seed, are held out and never trained on (at most half of a class); -1 means 10% of each class, rounded down (the authors' code also trains on 90%); 0 means none. It checks the adapter (adapter.select), scores settings (bicyc eval --split val) and calibrates exported models."`
}

// Stream splits the classes into tasks.
type Stream struct {
	Tasks      int   `mapstructure:"tasks" yaml:"tasks" doc:"Number of tasks."`
	FirstTask  int   `mapstructure:"first_task" yaml:"first_task" doc:"Classes in the first task; 0 splits all classes equally."`
	ClassOrder []int `mapstructure:"class_order" yaml:"class_order" doc:"Explicit class order (a permutation of all class ids); empty means order_seed decides."`
	OrderSeed  int64 `mapstructure:"order_seed" yaml:"order_seed" doc:"Seed of the class-order permutation; -1 keeps the natural order 0..K-1."`
}

// Model chooses the networks.
type Model struct {
	Backbone   arch.Backbone `mapstructure:"backbone" yaml:"backbone" doc:"Feature extractor: convnet (28x28 default), resnet18 (CIFAR stem: 3x3 stride-1 conv, no max-pool; 32x32 RGB, docs/method.md; the authors' code uses it for TinyImageNet's 64x64 too) or resnet18-imagenet (torchvision's stem: 7x7 stride-2 conv and 3x3 stride-2 max-pool; 224x224 ImageNet-100 and CUB-200 in the authors' code, and any photo size from 32x32)."`
	FeatureDim int           `mapstructure:"feature_dim" yaml:"feature_dim" doc:"Feature dimension S of the prototypes (docs/method.md: 64)."`
	Mapper     arch.Mapper   `mapstructure:"mapper" yaml:"mapper" doc:"Architecture of the distiller D and adapter A: mlp (S -> hidden_mult*S -> S with exact GELU, the paper's), linear (S x S), or residual-mlp (x + mlp(x) with the last layer starting at zero, so an untrained map is the identity)."`
	HiddenMult int           `mapstructure:"hidden_mult" yaml:"hidden_mult" doc:"Hidden width of the mlp mapper as a multiple of S (docs/method.md: 32)."`
	LinearBias bool          `mapstructure:"linear_bias" yaml:"linear_bias" doc:"With model.mapper linear, D and A add a bias, y = x W^T + b, as the nn.Linear of the authors' code does; false is docs/method.md's S x S map without bias. The bias is trained, checkpointed and exported (adapter.onnx). Needs model.mapper linear."`

	// Pretrained ResNets and fine-tuning (docs/training.md, "Pretrained backbones for photos").
	Width        int    `mapstructure:"width" yaml:"width" doc:"Channels of a ResNet's first stage, its stages having 1, 2, 4 and 8 times as many; 0 means 64, the standard ResNet-18 (a pretrained file must match). Narrower ResNets train faster; must be 0 for the convnet."`
	Pretrained   string `mapstructure:"pretrained" yaml:"pretrained" doc:"ONNX file of a torchvision ResNet-18 whose conv and BatchNorm weights and running statistics start the resnet18-imagenet backbone (export it with training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False); its fc is ignored and the 1x1 reduction to S starts from the usual random initialisation. Empty trains from scratch."`
	FreezeStages int    `mapstructure:"freeze_stages" yaml:"freeze_stages" doc:"Leading backbone stages kept fixed while training, their BatchNorm in evaluation mode: for a ResNet 1 is the stem, 2 adds layer1, ..., 4 leaves layer4 and the reduction trainable, 5 only the reduction; the convnet has 3 stages (its conv blocks). 0 trains everything. Frozen weights are still saved in checkpoints and exported."`
}

// Train holds Stage I optimisation settings.
type Train struct {
	EpochsFirst        int       `mapstructure:"epochs_first" yaml:"epochs_first" doc:"Stage I epochs on task 1."`
	Epochs             int       `mapstructure:"epochs" yaml:"epochs" doc:"Stage I epochs on every later task."`
	BatchSize          int       `mapstructure:"batch_size" yaml:"batch_size" doc:"Training mini-batch size (drop_last), 2 to 65536, and its float32 input at most 4 GiB; a task with fewer images uses them all as one batch."`
	LRFirst            float64   `mapstructure:"lr_first" yaml:"lr_first" doc:"Learning rate on task 1 (docs/method.md: 0.1); in (0, 10]."`
	LR                 float64   `mapstructure:"lr" yaml:"lr" doc:"Learning rate on later tasks (docs/method.md: 0.01); in (0, 10]."`
	Momentum           float64   `mapstructure:"momentum" yaml:"momentum" doc:"SGD momentum, in [0, 1)."`
	WeightDecay        float64   `mapstructure:"weight_decay" yaml:"weight_decay" doc:"SGD weight decay (L2), in [0, 1)."`
	BackboneLRScale    float64   `mapstructure:"backbone_lr_scale" yaml:"backbone_lr_scale" doc:"Stage I learning-rate factor of the backbone's layers before its 1x1 reduction; the reduction, the head, D and A keep lr_first / lr. The paper fine-tunes a pretrained ResNet-18 on CUB-200 with 0.1 (1e-2 backbone, 1e-1 heads); 1 trains everything alike."`
	Milestones         []float64 `mapstructure:"milestones" yaml:"milestones" doc:"Fractions of the epochs at which the learning rate is multiplied by lr_decay."`
	LRDecay            float64   `mapstructure:"lr_decay" yaml:"lr_decay" doc:"Learning-rate factor at each milestone."`
	MilestoneRounding  string    `mapstructure:"milestone_rounding" yaml:"milestone_rounding" doc:"How a milestone fraction m of E epochs becomes an epoch, in Stage I (task 1 too) and for adapter.milestones: round (nearest epoch, a milestone at epoch 0 ignored) or truncate (int(m*E) and a milestone at epoch 0 decays from the start, as the authors' code and PyTorch's MultiStepLR do: with 3 epochs 0, 1, 2 instead of 1, 2, 3). Equal at 10 epochs."`
	ClipNorm           float64   `mapstructure:"clip_norm" yaml:"clip_norm" doc:"Gradient-norm clipping over backbone, head, D and A together; 0 turns it off."`
	Rotation           bool      `mapstructure:"rotation" yaml:"rotation" doc:"Rotation self-supervision on task 1: each image and its 90/180/270-degree turns, head of 4x classes (docs/method.md, Task 1)."`
	RotationSplitBatch bool      `mapstructure:"rotation_split_batch" yaml:"rotation_split_batch" doc:"With rotation, each task-1 step takes batch_size/4 images and their three turns, batch_size rows in all, as AdaGauss's public code does (train_backbone: batch_size // 4), on which the authors' code builds; false feeds batch_size images (4x the rows, 4x fewer steps)."`
	DetachWarmup       float64   `mapstructure:"detach_warmup" yaml:"detach_warmup" doc:"Fraction of the first epochs during which features are detached (docs/method.md: 1%)."`
	EvalBatch          int       `mapstructure:"eval_batch" yaml:"eval_batch" doc:"Batch size for feature extraction at evaluation and statistics time."`
	MinStepsFirst      int       `mapstructure:"min_steps_first" yaml:"min_steps_first" doc:"Stage I on task 1 (training from scratch) makes at least this many optimisation steps: a small first task gets more epochs (the learning-rate milestones scale with them); 0 follows epochs_first alone (the authors' code)."`
	FreezeBNStats      bool      `mapstructure:"freeze_bn_stats" yaml:"freeze_bn_stats" doc:"On every task after the first, BatchNorm runs in evaluation mode: its running statistics are used and kept while its scale and shift still train, so a new task's images do not move the old classes' features through the statistics (a new task unlike the old ones, such as bicyc learn's, moved them most). false trains BatchNorm as the authors' code does."`
	MinSteps           int       `mapstructure:"min_steps" yaml:"min_steps" doc:"Stage I on every later task makes at least this many optimisation steps; 0 (the default, the authors' code) follows the epochs alone: measured on Fashion-MNIST, more steps on a small later task moved the backbone further and lost more old-class accuracy than they gained on the new classes (docs/training.md, Small tasks)."`
	Device             string    `mapstructure:"device" yaml:"device" doc:"Where the run trains: auto (CUDA when the GPU training step exists and CUDA loads, else the CPU), cpu, or cuda (fail before any work unless it can train on the GPU). The GPU step is being built (docs/gpu.md, Training on an NVIDIA GPU): until then auto trains on the CPU without loading CUDA, and cuda is refused before any work, naming each CUDA library or function that is missing when CUDA does not load. The run log and each task's metrics record the device used; checkpoints are the same whatever the device."`

	// Contrastive task 1 (docs/method.md, Contrastive task 1), an extension, off by default.
	ContrastiveWeight      float64 `mapstructure:"contrastive_weight" yaml:"contrastive_weight" doc:"Extension (docs/method.md, Contrastive task 1): weight of SimCLR's NT-Xent loss on task 1, beside rotation (which it needs, with rotation_split_batch): each step takes batch_size/4 images as before, each in two augmentations (the crop and flip drawn twice) at two turns q and q+2 (q drawn per image), the same batch_size rows, and a projection head (S -> S -> S, ReLU) trained on task 1 only pulls an image's two views at one turn together against every other row. 0 (the default) is off, the paper's task 1."`
	ContrastiveTemperature float64 `mapstructure:"contrastive_temperature" yaml:"contrastive_temperature" doc:"Temperature of train.contrastive_weight's NT-Xent (SimCLR's CIFAR-10 setting: 0.5); in (0, 10]."`
}

// Loss holds the Stage I loss weights and switches (docs/method.md, Stage I).
type Loss struct {
	Bi               bool    `mapstructure:"bi" yaml:"bi" doc:"Use the bidirectional alignment L_n2o + L_o2n at lambda_bi (bicyc); off, L_n2o alone distils at kd_weight, so bi and cyc both off is the AdaGauss baseline (paper, ablation)."`
	Cyc              bool    `mapstructure:"cyc" yaml:"cyc" doc:"Use the cycle-consistency loss L_cyc (bicyc)."`
	Pair             bool    `mapstructure:"pair" yaml:"pair" doc:"Use the pairwise cosine-similarity loss L_pair (bicyc)."`
	AntiCollapse     bool    `mapstructure:"anti_collapse" yaml:"anti_collapse" doc:"Use the robust anti-collapse loss L_ac."`
	LambdaBi         float64 `mapstructure:"lambda_bi" yaml:"lambda_bi" doc:"Weight of L_n2o + L_o2n (authors' code: 5; docs/method.md)."`
	LambdaCyc        float64 `mapstructure:"lambda_cyc" yaml:"lambda_cyc" doc:"Weight of L_cyc (authors' code: 2; the paper's main table uses 1)."`
	LambdaPair       float64 `mapstructure:"lambda_pair" yaml:"lambda_pair" doc:"Weight of L_pair (docs/method.md: 0.05)."`
	PairRows         int     `mapstructure:"pair_rows" yaml:"pair_rows" doc:"L_pair uses at most this many random rows of the batch (docs/method.md: 128)."`
	PairSampling     string  `mapstructure:"pair_sampling" yaml:"pair_sampling" doc:"Which rows L_pair uses when the batch has more than pair_rows: random (each of its two terms draws its own random rows every step, from a stream of its own seeded by seed, as the authors' code does; docs/method.md) or first (the first pair_rows rows: batches are shuffled, so these are a uniform random subset too, shared by both terms). Identical when the batch has at most pair_rows rows."`
	Alpha            float64 `mapstructure:"alpha" yaml:"alpha" doc:"Weight of L_ac (docs/method.md: 1)."`
	Beta             float64 `mapstructure:"beta" yaml:"beta" doc:"Cap on each Cholesky diagonal entry in L_ac (docs/method.md: 1)."`
	ACShrink         float64 `mapstructure:"ac_shrink" yaml:"ac_shrink" doc:"L_ac shrinkage kappa: adds kappa*tr/S*I to the batch covariance (authors' code: 0)."`
	ACJitter         float64 `mapstructure:"ac_jitter" yaml:"ac_jitter" doc:"L_ac jitter eps added to the batch covariance diagonal (authors' code: 1e-6)."`
	KDWeight         float64 `mapstructure:"kd_weight" yaml:"kd_weight" doc:"adagauss only: weight of the feature distillation L_n2o (its published script: 10)."`
	CycleDetachInner bool    `mapstructure:"cycle_detach_inner" yaml:"cycle_detach_inner" doc:"Detach the inner map of each cycle term so it trains only its outer map (authors' code; docs/method.md, Stage I); false follows the paper, where both maps get cycle gradients."`
	OutlierExposure  float64 `mapstructure:"outlier_exposure" yaml:"outlier_exposure" doc:"Weight of the outlier-exposure term L_oe in Stage I of every task (docs/method.md, Outlier exposure; Hendrycks et al. 2019 use 0.5): each step adds half a batch of images made from the step's own images (patch shuffles, heavy crops, halves of two classes) and trains the head's outputs on them towards uniform, so that images of no known class score as unknown; 0 (the default) is off, the paper's method."`

	Rehearsal Rehearsal `mapstructure:"rehearsal" yaml:"rehearsal"`
}

// Adapter holds Stage II: the adapter fine-tune and the transport of old classes.
type Adapter struct {
	Epochs           int     `mapstructure:"epochs" yaml:"epochs" doc:"Stage II adapter fine-tune epochs on cached features; -1 means half of train.epochs (docs/method.md, Stage II)."`
	LR               float64 `mapstructure:"lr" yaml:"lr" doc:"Stage II learning rate (docs/method.md: 0.01)."`
	TransportSamples int     `mapstructure:"transport_samples" yaml:"transport_samples" doc:"Monte Carlo samples per old class pushed through the adapter (authors' code: 10000)."`
	Alpha            float64 `mapstructure:"alpha" yaml:"alpha" doc:"Weight of L_ac(A(z_old)) in the Stage II fine-tune; -1 means loss.alpha (the authors' code; docs/method.md, Stage II); 0 is the paper's Algorithm 1 (Stage II minimises the MSE alone)."`
	MinSteps         int     `mapstructure:"min_steps" yaml:"min_steps" doc:"The adapter fine-tune (and adagauss's post-task adapter) makes at least this many steps: a small task gets more epochs; 0 follows the epochs alone (the authors' code)."`
	Select           bool    `mapstructure:"select" yaml:"select" doc:"After Stage II, score A, the identity and a least-squares linear map on the validation images of the new task (held-out MSE to the new features) and transport the old classes through the best; the log and metrics say which. Needs data.val_per_class; false always transports through A (the authors' code)."`
	Ensemble         int     `mapstructure:"ensemble" yaml:"ensemble" doc:"Extension (docs/method.md, Adapter ensemble): 1 transports through A alone (the paper); K > 1 also trains K-1 adapters from fresh initialisations on the task's feature pairs after Stage II, for the post-task adapter's epochs, and their mean output with A's is one more candidate of adapter.select (\"ensemble\"; without select it carries the old classes). Costs K-1 adapter trainings per task; the checkpoint keeps A alone."`

	// Fidelity switches (docs/method.md, "Fidelity switches").
	AdaGaussEpochs string    `mapstructure:"adagauss_epochs" yaml:"adagauss_epochs" doc:"adagauss only: epochs of its post-task adapter: train (train.epochs) or adapter (adapter.epochs, by default half of train.epochs, as the authors' code trains it)."`
	Milestones     []float64 `mapstructure:"milestones" yaml:"milestones" doc:"Fractions of the Stage II epochs (and of adagauss's post-task adapter's) at which adapter.lr is multiplied by train.lr_decay, placed as train.milestone_rounding says; empty keeps the rate constant. The authors' code decays at epochs 30, 60 and 90 of its 100 adapter epochs (0.3, 0.6, 0.9 at its budget), so with fewer than 31 adapter epochs its rate stays constant as here."`
}

// Eval holds evaluation options.
type Eval struct {
	Drift bool `mapstructure:"drift" yaml:"drift" doc:"Record drift diagnostics after every task: mu-L2, Sigma-Frobenius, symmetric KL, AD-% in [0.9,1.1]."`
}

// Export holds what happens after training.
type Export struct {
	Enabled    bool    `mapstructure:"enabled" yaml:"enabled" doc:"Export the ONNX model directory after training: at the end of bicyc train, bicyc learn and every run a sweep trains."`
	Dir        string  `mapstructure:"dir" yaml:"dir" doc:"Model directory to write, also bicyc export's default; empty means <run>/model. A sweep refuses it: its runs would share one directory."`
	AcceptRate float64 `mapstructure:"accept_rate" yaml:"accept_rate" doc:"Share of known-class images the exported model accepts by default; the rest, and images unlike every class, are answered as unknown. Calibrated on the validation split (data.val_per_class, at least 20 images); without one the model has no calibration and never answers unknown."`
}

// Quick is the quick profile, applied when quick is true.
type Quick struct {
	TrainPerClass    int  `mapstructure:"train_per_class" yaml:"train_per_class" doc:"Quick profile: training images per class."`
	TestPerClass     int  `mapstructure:"test_per_class" yaml:"test_per_class" doc:"Quick profile: test images per class."`
	EpochsFirst      int  `mapstructure:"epochs_first" yaml:"epochs_first" doc:"Quick profile: Stage I epochs on task 1."`
	Epochs           int  `mapstructure:"epochs" yaml:"epochs" doc:"Quick profile: Stage I epochs on later tasks."`
	TransportSamples int  `mapstructure:"transport_samples" yaml:"transport_samples" doc:"Quick profile: transport samples per old class."`
	AdapterEpochs    int  `mapstructure:"adapter_epochs" yaml:"adapter_epochs" doc:"Quick profile: Stage II epochs (a subset gives the adapter few steps per epoch)."`
	Rotation         bool `mapstructure:"rotation" yaml:"rotation" doc:"Quick profile: rotation self-supervision on task 1 (off: it quadruples task 1 and, in a few epochs, left old prototypes behind the new ones)."`
	MinSteps         int  `mapstructure:"min_steps" yaml:"min_steps" doc:"Quick profile: train.min_steps_first and adapter.min_steps (0 turns the floors off, which keeps the profile to minutes; adapter.select still guards the transport)."`
}

// FashionMNISTDir is the default data.dir: where Debian's
// dataset-fashion-mnist package (scripts/setup.sh) installs the four
// Fashion-MNIST IDX files. Package data reads from the same place when
// given no directory (data.FashionMNISTDir; a test keeps the two equal),
// which spares this package, imported by every reader of a run, the
// dataset code.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Default returns the defaults: Fashion-MNIST in 5 tasks of 2 classes with the
// convnet backbone, sized to finish in about 15 minutes on 2 CPU cores, and
// the loss weights and classifier options of docs/method.md.
func Default() Config {
	return Config{
		Seed:    0,
		Method:  MethodBicyc,
		RunDir:  "runs",
		Threads: 0,
		Data: Data{
			Kind: "fashion-mnist", Dir: FashionMNISTDir,
			Channels: 1, Height: 28, Width: 28,
			Mean: []float64{0.2860}, Std: []float64{0.3530},
			ResizeMode: arch.Squash, CenterCropRatio: 0.875,
			ResizedCropScale: []float64{0.08, 1}, ResizedCropRatio: []float64{3.0 / 4, 4.0 / 3},
			CropPadding: 2, HorizontalFlip: true, ValPerClass: -1,
		},
		Stream: Stream{Tasks: 5, OrderSeed: -1},
		Model:  Model{Backbone: arch.ConvNet, FeatureDim: 64, Mapper: arch.MLP, HiddenMult: 32},
		Train: Train{
			EpochsFirst: 4, Epochs: 3, BatchSize: 128,
			LRFirst: 0.1, LR: 0.01, BackboneLRScale: 1, Momentum: 0.9, WeightDecay: 5e-4,
			Milestones: []float64{0.3, 0.6, 0.9}, LRDecay: 0.1, MilestoneRounding: MilestoneRound, ClipNorm: 1,
			Rotation: true, RotationSplitBatch: true, DetachWarmup: 0.01, EvalBatch: 500,
			MinStepsFirst: 200, Device: DeviceAuto, ContrastiveTemperature: 0.5,
		},
		Loss: Loss{
			Bi: true, Cyc: true, Pair: true, AntiCollapse: true,
			LambdaBi: 5, LambdaCyc: 2, LambdaPair: 0.05, PairRows: 128, PairSampling: PairSamplingRandom,
			Alpha: 1, Beta: 1, ACShrink: 0, ACJitter: 1e-6, KDWeight: 10,
			CycleDetachInner: true,
			Rehearsal:        DefaultRehearsal(),
		},
		Adapter:    Adapter{Epochs: -1, AdaGaussEpochs: AdaGaussEpochsTrain, LR: 0.01, TransportSamples: 2000, Alpha: -1, MinSteps: 100, Select: true, Ensemble: 1},
		Anchors:    Anchors{Steps: 3, Step: 0.03, Start: AnchorStartNearest},
		Classifier: gauss.DefaultClassifierOptions(),
		Export:     Export{Enabled: true, AcceptRate: 0.95},
		QuickSet: Quick{
			TrainPerClass: 500, TestPerClass: 200,
			EpochsFirst: 2, Epochs: 3, TransportSamples: 500, AdapterEpochs: 5, Rotation: false,
		},
	}
}

// quickProfile lists the keys the quick profile replaces, each with the
// quick_profile key that replaces it and how.
var quickProfile = []struct {
	key, profile string
	apply        func(c *Config)
}{
	{"data.train_per_class", "quick_profile.train_per_class", func(c *Config) { c.Data.TrainPerClass = c.QuickSet.TrainPerClass }},
	{"data.test_per_class", "quick_profile.test_per_class", func(c *Config) { c.Data.TestPerClass = c.QuickSet.TestPerClass }},
	{"train.epochs_first", "quick_profile.epochs_first", func(c *Config) { c.Train.EpochsFirst = c.QuickSet.EpochsFirst }},
	{"train.epochs", "quick_profile.epochs", func(c *Config) { c.Train.Epochs = c.QuickSet.Epochs }},
	{"adapter.transport_samples", "quick_profile.transport_samples", func(c *Config) { c.Adapter.TransportSamples = c.QuickSet.TransportSamples }},
	{"adapter.epochs", "quick_profile.adapter_epochs", func(c *Config) { c.Adapter.Epochs = c.QuickSet.AdapterEpochs }},
	{"train.rotation", "quick_profile.rotation", func(c *Config) { c.Train.Rotation = c.QuickSet.Rotation }},
	{"train.min_steps_first", "quick_profile.min_steps", func(c *Config) { c.Train.MinStepsFirst = c.QuickSet.MinSteps }},
	{"adapter.min_steps", "quick_profile.min_steps", func(c *Config) { c.Adapter.MinSteps = c.QuickSet.MinSteps }},
}

// QuickOverrides returns, for the keys the quick profile replaces, the
// quick_profile key that replaces each: data.train_per_class ->
// quick_profile.train_per_class, ...
func QuickOverrides() map[string]string {
	out := make(map[string]string, len(quickProfile))
	for _, q := range quickProfile {
		out[q.key] = q.profile
	}
	return out
}

// Resolved returns c with the quick profile applied when Quick is set:
// each key of QuickOverrides takes its quick_profile value, whatever set it.
func (c Config) Resolved() Config {
	if !c.Quick {
		return c
	}
	for _, q := range quickProfile {
		q.apply(&c)
	}
	return c
}

// AdapterAlpha is the weight of the anti-collapse term in the Stage II
// fine-tune: adapter.alpha, or loss.alpha when that is -1 (docs/method.md, Stage II).
func (c Config) AdapterAlpha() float64 {
	if c.Adapter.Alpha >= 0 {
		return c.Adapter.Alpha
	}
	return c.Loss.Alpha
}

// AdapterEpochs is the number of Stage II epochs: half of Stage I's when
// Adapter.Epochs is -1 (docs/method.md, Stage II), at least one.
func (c Config) AdapterEpochs() int {
	if c.Adapter.Epochs >= 0 {
		return c.Adapter.Epochs
	}
	return max(1, c.Train.Epochs/2)
}

// Validate reports every invalid setting at once, each naming its key.
func (c Config) Validate() error {
	var errs []error
	nonFinite := map[string]bool{}
	c.validateFinite(func(key string, format string, args ...any) {
		nonFinite[key] = true
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	})
	// A key reported as not finite is not reported again by its range check.
	bad := func(key string, format string, args ...any) {
		if !nonFinite[key] {
			errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
		}
	}
	if !slices.Contains(Methods(), c.Method) {
		bad("method", "%q is not one of bicyc, adagauss, finetune", c.Method)
	}
	if c.Threads < 0 {
		bad("threads", "must be >= 0, got %d", c.Threads)
	}
	if c.RunName != "" {
		if err := names.Run(c.RunName); err != nil {
			bad("run_name", "%v", err)
		}
	}
	c.validateData(bad)
	c.validateModel(bad)
	c.validateTrain(bad)
	c.validateDevice(bad)
	c.validateStages(bad)
	c.validateFidelity(bad)
	c.Anchors.validate(bad)
	return errors.Join(errs...)
}

// problem records one invalid setting under its key (see Validate).
type problem func(key string, format string, args ...any)

// Bounds of settings that no run needs beyond, checked by Validate.
const (
	// MaxLearningRate bounds every learning rate: SGD on these networks
	// diverges long before (the method's rates are 0.1 and 0.01).
	MaxLearningRate = 10
	// MaxBatchSize bounds train.batch_size and train.eval_batch; Stage I
	// uses at most a task's images per batch anyway.
	MaxBatchSize = 1 << 16
	// maxBatchInputBytes bounds the float32 input of a training batch
	// and of an evaluation batch.
	maxBatchInputBytes = 4 << 30
)

// batchInputBytes estimates the float32 input of one Stage I batch:
// batch_size images, four times as many rows on task 1 with rotation
// unless the batch is split between the turns.
func (c Config) batchInputBytes() int64 {
	rows := int64(c.Train.BatchSize)
	if c.Train.Rotation && !c.Train.RotationSplitBatch {
		rows *= 4
	}
	return rows * c.imageInputBytes()
}

// imageInputBytes is one image's float32 input to the network.
func (c Config) imageInputBytes() int64 {
	return int64(max(c.Data.Channels, 0)) * int64(max(c.Data.Height, 0)) * int64(max(c.Data.Width, 0)) * 4
}

// validateFinite refuses NaN and infinite values of every number key
// (lists included), by name: a NaN passes every "< 0" test, and an
// infinite rate would only fail after the first step. The classifier.*
// keys are left to gauss.ClassifierOptions.Problems, their one check, so
// each problem is reported once.
func (c Config) validateFinite(bad problem) {
	walk(reflect.ValueOf(c), "", func(name string, _ reflect.StructField, v reflect.Value) {
		switch {
		case strings.HasPrefix(name, "classifier."):
		case v.Kind() == reflect.Float64 && !finite(v.Float()):
			bad(name, "must be a finite number, got %g", v.Float())
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Float64:
			for i := range v.Len() {
				if x := v.Index(i).Float(); !finite(x) {
					bad(name, "value %d must be a finite number, got %g", i, x)
				}
			}
		}
	})
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// validateData checks the data.* keys.
func (c Config) validateData(bad problem) {
	switch c.Data.Kind {
	case "fashion-mnist", "mnist", "cifar10", "cifar100":
		if c.Data.Dir == "" {
			bad("data.dir", "must name the dataset directory")
		}
	case "imagefolder":
		if c.Data.TrainDir == "" || c.Data.TestDir == "" {
			bad("data.train_dir", "imagefolder needs both data.train_dir and data.test_dir")
		}
	default:
		bad("data.kind", "%q is not one of fashion-mnist, mnist, cifar10, cifar100, imagefolder", c.Data.Kind)
	}
	if c.Data.Channels != 1 && c.Data.Channels != 3 {
		bad("data.channels", "must be 1 or 3, got %d", c.Data.Channels)
	}
	if c.Data.Height <= 0 || c.Data.Width <= 0 {
		bad("data.height", "image size must be positive, got %dx%d", c.Data.Height, c.Data.Width)
	}
	if len(c.Data.Mean) != len(c.Data.Std) || (len(c.Data.Mean) != 0 && len(c.Data.Mean) != c.Data.Channels) {
		bad("data.mean", "mean and std need one value per channel (%d), got %d and %d", c.Data.Channels, len(c.Data.Mean), len(c.Data.Std))
	}
	for i, s := range c.Data.Std {
		if !(s > 0) {
			bad("data.std", "value %d must be positive, got %g", i, s)
		}
	}
	if c.Data.CropPadding < 0 {
		bad("data.crop_padding", "must be >= 0, got %d", c.Data.CropPadding)
	}
	c.Data.validatePhoto(bad)
	if c.Data.TrainPerClass < 0 {
		bad("data.train_per_class", "must be >= 0 (0: all), got %d", c.Data.TrainPerClass)
	}
	if c.Data.TestPerClass < 0 {
		bad("data.test_per_class", "must be >= 0 (0: all), got %d", c.Data.TestPerClass)
	}
	if c.Data.ValPerClass < -1 {
		bad("data.val_per_class", "must be -1 (10%% of each class), 0 (none) or a count, got %d", c.Data.ValPerClass)
	}
}

// validateModel checks the stream.* and model.* keys.
func (c Config) validateModel(bad problem) {
	if c.Stream.Tasks < 1 {
		bad("stream.tasks", "must be >= 1, got %d", c.Stream.Tasks)
	}
	if c.Stream.FirstTask < 0 {
		bad("stream.first_task", "must be >= 0, got %d", c.Stream.FirstTask)
	}
	c.validateBackbone(bad)
	if c.Model.FeatureDim < 2 {
		bad("model.feature_dim", "must be >= 2, got %d", c.Model.FeatureDim)
	}
	if err := c.Model.Mapper.Check(); err != nil {
		bad("model.mapper", "%v", err)
	}
	if c.Model.HiddenMult < 1 {
		bad("model.hidden_mult", "must be >= 1, got %d", c.Model.HiddenMult)
	}
}

// validateTrain checks the train.* keys (rotation against the image size).
func (c Config) validateTrain(bad problem) {
	if c.Train.EpochsFirst < 1 || c.Train.Epochs < 1 {
		bad("train.epochs", "epochs and epochs_first must be >= 1, got %d and %d", c.Train.Epochs, c.Train.EpochsFirst)
	}
	if c.Train.BatchSize < 2 || c.Train.BatchSize > MaxBatchSize {
		bad("train.batch_size", "must lie in [2, %d], got %d", MaxBatchSize, c.Train.BatchSize)
	} else if mem := c.batchInputBytes(); mem > maxBatchInputBytes {
		bad("train.batch_size", "%d images of %dx%dx%d take %.1f GiB as float32 input alone (more with rotation), over the %d GiB this check allows; the network's activations take many times more",
			c.Train.BatchSize, c.Data.Channels, c.Data.Height, c.Data.Width, float64(mem)/(1<<30), maxBatchInputBytes>>30)
	} else if c.Train.Rotation && c.Train.RotationSplitBatch && c.Train.BatchSize < 8 {
		bad("train.batch_size", "must be >= 8 with train.rotation and train.rotation_split_batch (batch_size/4 images per step), got %d", c.Train.BatchSize)
	}
	for _, lr := range []struct {
		key string
		v   float64
	}{{"train.lr_first", c.Train.LRFirst}, {"train.lr", c.Train.LR}, {"adapter.lr", c.Adapter.LR}} {
		if !(lr.v > 0 && lr.v <= MaxLearningRate) {
			bad(lr.key, "a learning rate must lie in (0, %g], got %g", float64(MaxLearningRate), lr.v)
		}
	}
	if !(c.Train.Momentum >= 0 && c.Train.Momentum < 1) {
		bad("train.momentum", "must lie in [0, 1), got %g", c.Train.Momentum)
	}
	if !(c.Train.WeightDecay >= 0 && c.Train.WeightDecay < 1) {
		bad("train.weight_decay", "must lie in [0, 1), got %g", c.Train.WeightDecay)
	}
	if !(c.Train.LRDecay > 0 && c.Train.LRDecay <= 1) {
		bad("train.lr_decay", "must lie in (0, 1], got %g", c.Train.LRDecay)
	}
	if !(c.Train.DetachWarmup >= 0 && c.Train.DetachWarmup <= 1) {
		bad("train.detach_warmup", "a fraction of the epochs, must lie in [0, 1], got %g", c.Train.DetachWarmup)
	}
	if !(c.Train.BackboneLRScale > 0) {
		bad("train.backbone_lr_scale", "must be positive, got %g (freeze stages with model.freeze_stages)", c.Train.BackboneLRScale)
	}
	for _, m := range c.Train.Milestones {
		if m <= 0 || m >= 1 {
			bad("train.milestones", "fractions must lie in (0,1), got %g", m)
		}
	}
	if c.Train.ClipNorm < 0 {
		bad("train.clip_norm", "must be >= 0, got %g", c.Train.ClipNorm)
	}
	if !(c.Train.ContrastiveWeight >= 0) || math.IsInf(c.Train.ContrastiveWeight, 0) {
		bad("train.contrastive_weight", "must be >= 0 and finite, got %g", c.Train.ContrastiveWeight)
	} else if c.Train.ContrastiveWeight > 0 && !(c.Train.Rotation && c.Train.RotationSplitBatch) {
		bad("train.contrastive_weight", "needs train.rotation and train.rotation_split_batch (its two views take two of each image's four turns), got weight %g", c.Train.ContrastiveWeight)
	}
	if !(c.Train.ContrastiveTemperature > 0 && c.Train.ContrastiveTemperature <= 10) {
		bad("train.contrastive_temperature", "must lie in (0, 10], got %g", c.Train.ContrastiveTemperature)
	}
	if c.Train.Rotation && c.Data.Height != c.Data.Width {
		bad("train.rotation", "needs square images, got %dx%d", c.Data.Height, c.Data.Width)
	}
	if c.Train.MinStepsFirst < 0 || c.Train.MinSteps < 0 || c.Adapter.MinSteps < 0 {
		bad("train.min_steps", "train.min_steps_first, train.min_steps and adapter.min_steps must be >= 0, got %d, %d and %d", c.Train.MinStepsFirst, c.Train.MinSteps, c.Adapter.MinSteps)
	}
	if err := gauss.ValidateAcceptRate(c.Export.AcceptRate); err != nil {
		bad("export.accept_rate", "%v", err)
	}
	if c.Train.EvalBatch < 1 || c.Train.EvalBatch > MaxBatchSize {
		bad("train.eval_batch", "must lie in [1, %d], got %d", MaxBatchSize, c.Train.EvalBatch)
	} else if mem := int64(c.Train.EvalBatch) * c.imageInputBytes(); mem > maxBatchInputBytes {
		bad("train.eval_batch", "%d images of %dx%dx%d take %.1f GiB as float32 input alone, over the %d GiB this check allows",
			c.Train.EvalBatch, c.Data.Channels, c.Data.Height, c.Data.Width, float64(mem)/(1<<30), maxBatchInputBytes>>30)
	}
}

// validateStages checks the loss.*, adapter.* and classifier.* keys.
func (c Config) validateStages(bad problem) {
	if c.Loss.PairRows < 2 {
		bad("loss.pair_rows", "must be >= 2, got %d", c.Loss.PairRows)
	}
	c.Loss.Rehearsal.validate(c, bad)
	if oe := c.Loss.OutlierExposure; !(oe >= 0) || math.IsInf(oe, 1) {
		bad("loss.outlier_exposure", "must be a finite weight >= 0 (0 is off), got %g", oe)
	}
	if c.Adapter.Epochs < -1 {
		bad("adapter.epochs", "must be -1 (half of train.epochs) or >= 0, got %d", c.Adapter.Epochs)
	}
	if c.Adapter.Alpha < 0 && c.Adapter.Alpha != -1 {
		bad("adapter.alpha", "must be >= 0, or -1 for loss.alpha, got %g", c.Adapter.Alpha)
	}
	if c.Adapter.Ensemble < 1 || c.Adapter.Ensemble > maxEnsemble {
		bad("adapter.ensemble", "must be in [1, %d], got %d", maxEnsemble, c.Adapter.Ensemble)
	}
	if c.Adapter.TransportSamples < 2 {
		bad("adapter.transport_samples", "must be >= 2, got %d", c.Adapter.TransportSamples)
	}
	for _, p := range c.Classifier.Problems() {
		bad("classifier."+p.Key, "must be %s, got %v", p.Want, p.Value)
	}
	for _, w := range []struct {
		key string
		v   float64
	}{
		{"loss.lambda_bi", c.Loss.LambdaBi}, {"loss.lambda_cyc", c.Loss.LambdaCyc}, {"loss.lambda_pair", c.Loss.LambdaPair},
		{"loss.alpha", c.Loss.Alpha}, {"loss.beta", c.Loss.Beta}, {"loss.ac_shrink", c.Loss.ACShrink},
		{"loss.ac_jitter", c.Loss.ACJitter}, {"loss.kd_weight", c.Loss.KDWeight},
	} {
		if w.v < 0 {
			bad(w.key, "must be >= 0, got %g", w.v)
		}
	}
	q := c.QuickSet
	for _, n := range []struct {
		key string
		v   int
		min int
	}{
		{"quick_profile.train_per_class", q.TrainPerClass, 0}, {"quick_profile.test_per_class", q.TestPerClass, 0},
		{"quick_profile.epochs_first", q.EpochsFirst, 1}, {"quick_profile.epochs", q.Epochs, 1},
		{"quick_profile.transport_samples", q.TransportSamples, 2}, {"quick_profile.adapter_epochs", q.AdapterEpochs, -1},
		{"quick_profile.min_steps", q.MinSteps, 0},
	} {
		if n.v < n.min {
			bad(n.key, "must be >= %d, got %d", n.min, n.v)
		}
	}
}

// validatePhoto checks the resize mode and the random resized crop.
func (d Data) validatePhoto(bad problem) {
	if err := d.ResizeMode.Check(); err != nil {
		bad("data.resize_mode", "%v", err)
	}
	if !(d.CenterCropRatio > 0 && d.CenterCropRatio <= 1) {
		bad("data.center_crop_ratio", "must lie in (0, 1], got %g", d.CenterCropRatio)
	}
	if d.LoadSize < 0 {
		bad("data.load_size", "must be >= 0, got %d", d.LoadSize)
	}
	if d.RandomResizedCrop && d.CropPadding > 0 {
		bad("data.random_resized_crop", "replaces data.crop_padding: set crop_padding to 0 (got %d)", d.CropPadding)
	}
	for i, r := range [][]float64{d.ResizedCropScale, d.ResizedCropRatio} {
		if len(r) != 2 || !(r[0] > 0 && r[0] <= r[1]) || math.IsInf(r[1], 0) {
			bad([]string{"data.resized_crop_scale", "data.resized_crop_ratio"}[i], "must be two finite values 0 < low <= high, got %v", r)
		}
	}
}

// DefaultRunName is the run folder name used when RunName is empty.
func (c Config) DefaultRunName(configName string) string {
	name := strings.TrimSuffix(configName, ".yaml")
	if name == "" {
		name = "default"
	}
	return fmt.Sprintf("%s-%s-s%d", name, c.Method, c.Seed)
}

// RunFolder returns the run's folder, run_dir/<name>, where name is
// RunName or, when that is empty, DefaultRunName(configName). The name
// must be one folder name (names.Run), so a run is never written outside
// run_dir; the error names the key or the config file it came from.
func (c Config) RunFolder(configName string) (string, error) {
	name := c.RunName
	if name == "" {
		name = c.DefaultRunName(configName)
		if err := names.Run(name); err != nil {
			return "", fmt.Errorf("run name from config file name %q: %w; set run_name", configName, err)
		}
	} else if err := names.Run(name); err != nil {
		return "", fmt.Errorf("run_name: %w", err)
	}
	return filepath.Join(c.RunDir, name), nil
}

// validateBackbone reports bad model.backbone, model.width, model.pretrained and model.freeze_stages values.
func (c Config) validateBackbone(bad func(key, format string, args ...any)) {
	m := c.Model
	stages := 5 // stem and four residual stages
	if err := m.Backbone.Check(); err != nil {
		bad("model.backbone", "%v", err)
	}
	if m.Backbone == arch.ConvNet {
		stages = 3
		if m.Width != 0 {
			bad("model.width", "the convnet has a fixed width; set 0, got %d", m.Width)
		}
	}
	if m.Width < 0 {
		bad("model.width", "must be >= 0, got %d", m.Width)
	}
	if m.FreezeStages < 0 || m.FreezeStages > stages {
		bad("model.freeze_stages", "must lie in [0,%d] for %s, got %d", stages, m.Backbone, m.FreezeStages)
	}
	if m.Pretrained == "" {
		return
	}
	if m.Backbone != arch.ResNet18ImageNet {
		bad("model.pretrained", "needs model.backbone resnet18-imagenet (torchvision's ResNet-18), got %s", m.Backbone)
	}
	if c.Data.Channels != 3 {
		bad("model.pretrained", "a torchvision ResNet-18 takes RGB images: set data.channels to 3, got %d", c.Data.Channels)
	}
}
