package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/flagmap"
	"github.com/bicyc/bicyc/rundir"
)

// modelOptions are the flags that open the model, shared by every command.
type modelOptions struct {
	model       string
	provider    string
	threads     int
	topK        int
	ortLib      string
	engineCache string
	fp16        bool
	maxPixels   int64
	acceptRate  float64
	threshold   float64
	score       string
	exactScores bool
}

// envNames maps flags to the BICYC_* environment variables that set them
// when the flag is not given. Threads has its own name because the
// trainer's BICYC_THREADS means its training threads.
var envNames = map[string]string{
	"model":             "BICYC_MODEL",
	"provider":          "BICYC_PROVIDER",
	"threads":           "BICYC_INFER_THREADS",
	"top-k":             "BICYC_TOP_K",
	"ort-lib":           infer.LibraryPathEnv,
	"engine-cache":      "BICYC_ENGINE_CACHE",
	"fp16":              "BICYC_FP16",
	"max-pixels":        "BICYC_MAX_PIXELS",
	"addr":              "BICYC_ADDR",
	"admin-addr":        "BICYC_ADMIN_ADDR",
	"grpc-addr":         "BICYC_GRPC_ADDR",
	"grpc-admin-addr":   "BICYC_GRPC_ADMIN_ADDR",
	"model-repository":  "BICYC_MODEL_REPOSITORY",
	"max-body":          "BICYC_MAX_BODY",
	"max-buffered":      "BICYC_MAX_BUFFERED",
	"max-concurrent":    "BICYC_MAX_CONCURRENT",
	"accept-rate":       "BICYC_ACCEPT_RATE",
	"threshold":         "BICYC_UNKNOWN_THRESHOLD",
	"unknown-score":     "BICYC_UNKNOWN_SCORE",
	"collect-unknown":   "BICYC_COLLECT_UNKNOWN",
	"collect-max-files": "BICYC_COLLECT_MAX_FILES",
	"collect-max-bytes": "BICYC_COLLECT_MAX_BYTES",
}

func (o *modelOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.model, "model", "m", "", "model `dir`ectory exported by bicyc (env BICYC_MODEL)")
	fs.StringVar(&o.provider, "provider", string(infer.ProviderAuto), "execution provider: auto, tensorrt, cuda or cpu (env BICYC_PROVIDER)")
	fs.IntVar(&o.threads, "threads", infer.DefaultThreads, "ONNX Runtime intra-op threads per call, 0 = one per core (env BICYC_INFER_THREADS)")
	fs.IntVarP(&o.topK, "top-k", "k", 0, "predictions per image, 0 = the model's top_k (env BICYC_TOP_K)")
	fs.StringVar(&o.ortLib, "ort-lib", "", "ONNX Runtime shared `library` (env "+infer.LibraryPathEnv+", default "+infer.InstalledLibraryPath+")")
	fs.StringVar(&o.engineCache, "engine-cache", "", "TensorRT engine cache `dir`ectory (env BICYC_ENGINE_CACHE)")
	fs.BoolVar(&o.fp16, "fp16", false, "let TensorRT run in half precision (env BICYC_FP16)")
	fs.Int64Var(&o.maxPixels, "max-pixels", infer.DefaultMaxPixels, "refuse images whose header declares more `pixels` (env BICYC_MAX_PIXELS)")
	fs.Float64Var(&o.acceptRate, "accept-rate", 0, "share of known-class images to accept, the rest are unknown; 0 = the model's calibrated default, normally 0.95 (env BICYC_ACCEPT_RATE)")
	fs.Float64Var(&o.threshold, "threshold", 0, "answer unknown above this unknown score instead (for an uncalibrated model: the nearest distance); 0 = none (env BICYC_UNKNOWN_THRESHOLD)")
	fs.StringVar(&o.score, "unknown-score", "", "unknown score: "+scoreNames()+"; empty = the model's (env BICYC_UNKNOWN_SCORE)")
	fs.BoolVar(&o.exactScores, "exact-scores", false, "score every class exactly, also when the model has a shortlist (env BICYC_EXACT_SCORES)")
}

// modelFlagsUsed is the annotation of a subcommand that uses only some of
// the model flags (modelOptions.addFlags): their names, comma-separated.
// A subcommand without it uses them all.
const modelFlagsUsed = "model-flags"

// embedFlags are the model flags of the commands that embed images with
// the model's backbone to write a new model directory (add-classes,
// calibrate): the model and how ONNX Runtime runs it and reads images,
// not how answers are ranked or judged unknown.
const embedFlags = "model,provider,threads,ort-lib,engine-cache,fp16,max-pixels"

// refuseUnusedModelFlags refuses a model flag given on the command line
// to a subcommand that does not use it, naming it, instead of ignoring it.
func refuseUnusedModelFlags(cmd *cobra.Command) error {
	list, ok := cmd.Annotations[modelFlagsUsed]
	if !ok {
		return nil
	}
	used := strings.Split(list, ",")
	var unused []string
	cmd.Root().PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Changed && !slices.Contains(used, f.Name) {
			unused = append(unused, "--"+f.Name)
		}
	})
	if len(unused) == 0 {
		return nil
	}
	return fmt.Errorf("%s does not use %s: leave it out (it uses --%s)", cmd.CommandPath(), strings.Join(unused, ", "), strings.Join(used, ", --"))
}

// collectOptions save images answered unknown (--collect-unknown).
type collectOptions struct {
	dir      string
	maxFiles int
	maxBytes int64
}

func (o *collectOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.dir, "collect-unknown", "", "save images answered unknown into this `dir`ectory, to label them for add-classes or bicyc learn (env BICYC_COLLECT_UNKNOWN)")
	fs.IntVar(&o.maxFiles, "collect-max-files", 10000, "stop collecting once the directory holds this many `files` (env BICYC_COLLECT_MAX_FILES)")
	fs.Int64Var(&o.maxBytes, "collect-max-bytes", 1<<30, "stop collecting once the directory holds this many `bytes` (env BICYC_COLLECT_MAX_BYTES)")
}

// collector returns the Collector the flags ask for, or nil without
// --collect-unknown.
func (o *collectOptions) collector() (*infer.Collector, error) {
	if o.dir == "" {
		return nil, nil
	}
	return infer.NewCollector(o.dir, o.maxFiles, o.maxBytes)
}

// open opens the model with these options; the auto provider's one line
// goes to log.
func (o *modelOptions) open(ctx context.Context, log io.Writer) (*infer.Classifier, error) {
	if o.model == "" {
		return nil, fmt.Errorf("no model: pass --model DIR or set BICYC_MODEL")
	}
	opts, err := o.openOptions(log)
	if err != nil {
		return nil, err
	}
	warnBehind(log, o.model)
	return infer.Open(ctx, o.model, opts...)
}

// warnBehind warns when the model directory is older than the last
// checkpoint of the run it sits in (rundir.CheckModel): a train or learn
// was killed before its export.
func warnBehind(w io.Writer, modelDir string) {
	if behind, err := rundir.CheckModel(modelDir); err == nil && behind != nil && w != nil {
		fmt.Fprintf(w, "bicyc-infer: warning: %s\n", behind)
	}
}

// openOptions are these options for infer.
func (o *modelOptions) openOptions(log io.Writer) ([]infer.Option, error) {
	provider, err := infer.ParseProvider(o.provider)
	if err != nil {
		return nil, err
	}
	return []infer.Option{
		infer.WithProvider(provider),
		infer.WithThreads(o.threads),
		infer.WithTopK(o.topK),
		infer.WithLibraryPath(o.ortLib),
		infer.WithEngineCache(o.engineCache),
		infer.WithFP16(o.fp16),
		infer.WithMaxPixels(o.maxPixels),
		infer.WithAcceptRate(o.acceptRate),
		infer.WithUnknownThreshold(o.threshold),
		infer.WithUnknownScore(o.score),
		infer.WithExactScores(o.exactScores),
		infer.WithLog(log),
	}, nil
}

// applyEnv sets every flag of fs that was not given on the command line
// from its BICYC_* variable, if set: flags > environment > defaults. Values
// go through the flag's own parser, so a malformed variable is an error
// that names it.
func applyEnv(fs *pflag.FlagSet) error {
	v := viper.New()
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		name, ok := envNames[f.Name]
		if !ok || f.Changed || err != nil {
			return
		}
		if err = v.BindEnv(f.Name, name); err != nil || !v.IsSet(f.Name) {
			return
		}
		if setErr := fs.Set(f.Name, v.GetString(f.Name)); setErr != nil {
			err = fmt.Errorf("%s=%q: %w", name, v.GetString(f.Name), setErr)
		}
	})
	return err
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	opts := &classifyOptions{}
	cmd := &cobra.Command{
		Use:   "bicyc-infer [flags] <path>...",
		Short: "Classify images with a bicyc model through ONNX Runtime",
		Long: `bicyc-infer classifies images with a model directory exported by bicyc. Each <path> is an
image file, a directory (searched recursively for .png, .jpg, .jpeg, .gif, .bmp, .tif, .tiff
and .webp files; hidden entries are passed over, and named pipes, devices and sockets are
skipped with a message) or - for one image on standard input. Every image is read up to 8 bytes
per allowed pixel plus 1 MiB (129 MiB at the default --max-pixels of 16 Mpx) and refused if its
header declares more than --max-pixels (a JPEG also if it has more than 100 scans, or scans summing
to more than 32 passes over --max-pixels: a decoding bomb); each is reduced to the model's input before the next is
decoded, so memory holds one decoded image at a time: at most about 128 MiB + 16 bytes x
--max-pixels of Go memory (384 MiB at 16 Mpx; set as the Go runtime's soft memory limit unless
GOMEMLIMIT is set), plus ONNX Runtime's own, about the size of the model.

It prints the top-k classes of every image, closest first: the distance is the squared
Mahalanobis distance to the class prototype, smaller is closer. A calibrated model (exported
with a validation split, or from 'bicyc-infer calibrate') also gives each class's probability
and answers "unknown" for images unlike every class: by default it accepts 95% of known-class
images; --accept-rate or --threshold change that, and --collect-unknown DIR keeps the unknown
images so they can be labelled and added ('bicyc-infer add-classes'). A file that cannot be read
or classified gets an error line and the others are still classified; the exit status is
non-zero if any failed. 'bicyc-infer serve' runs the same model as an HTTP service.

Flags fall back to BICYC_* environment variables (named in each flag's help), then defaults.`,
		Example:       rootExamples,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// Before applyEnv: the environment is ambient, the command
			// line is what the user asked of this command.
			if err := refuseUnusedModelFlags(cmd); err != nil {
				return err
			}
			return applyEnv(cmd.Flags())
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.paths = args
			return runClassify(cmd.Context(), opts, stdin, stdout, stderr)
		},
	}
	// A completion command would shadow an image file named "completion".
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	opts.model.addFlags(cmd.PersistentFlags())
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per image instead of a table")
	cmd.Flags().IntVar(&opts.batch, "batch", 16, "images per ONNX Runtime call")
	opts.collect.addFlags(cmd.Flags())
	cmd.AddCommand(newServeCmd(&opts.model, stderr), newAddClassesCmd(&opts.model, stdout), newCalibrateCmd(&opts.model, stdout), newShortlistCmd(&opts.model, stdout),
		newDoctorCmd(&opts.model, stdout, stderr))
	messageFlags.Commands(cmd)
	return cmd
}

// messageFlags maps the names that library errors use to this command's
// flags (package flagmap).
var messageFlags = flagmap.Map{"data.skip_unreadable": "data.skip_unreadable or --skip-unreadable"}

// rootExamples are the README's journeys from the inference side, as
// bicyc-infer --help shows them; the tests parse every line with the real
// command tree.
const rootExamples = `  # 1. Classify with the model 'make train' exported: a table, or one JSON object per image
  bicyc-infer --model runs/fmnist-t5-bicyc-s0/model imaging/testdata/exif/upright.png
  bicyc-infer -m runs/fmnist-t5-bicyc-s0/model --json imaging/testdata/exif/ > predictions.jsonl

  # 2. Serve a model trained on your photos (bicyc --help shows the training)
  bicyc-infer -m runs/shop/model serve --addr :8080
  curl -H 'Content-Type: image/jpeg' --data-binary @photo.jpg localhost:8080/v1/classify

  # 3. Keep teaching: collect the images answered "unknown", label them (a folder per
  #    class, at least 5 images each), add them as classes without training, reload
  bicyc-infer -m models/current serve --collect-unknown inbox/ --collect-max-files 10000
  bicyc-infer add-classes --model models/current --from labelled/ --out models/v2
  ln -s v2 models/next && mv -T models/next models/current && curl -X POST localhost:8081/admin/reload

  # README.md and docs/ (inference.md, serving.md) tell the rest.`

// scoreNames lists the unknown scores for the flag's help.
func scoreNames() string {
	var names []string
	for _, u := range gauss.UnknownScores() {
		names = append(names, string(u))
	}
	return strings.Join(names, ", ")
}
