package data

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/imaging"
)

// Dataset kinds accepted by Open and DefaultNormalization.
const (
	KindFashionMNIST = "fashion-mnist"
	KindMNIST        = "mnist"
	KindCIFAR10      = "cifar10"
	KindCIFAR100     = "cifar100"
	KindImageFolder  = "imagefolder"
)

// ErrSource marks a Source that names no loadable dataset (an unknown kind
// or a missing directory or size).
var ErrSource = errors.New("invalid data source")

// Source says where a dataset lives; it is decoded from configuration.
//
// Kind is one of the Kind constants. Dir is the dataset directory for the
// IDX and CIFAR kinds (empty for fashion-mnist means FashionMNISTDir). For
// imagefolder, TrainDir and TestDir are the two class-folder roots, or, when
// both are empty, Dir/train and Dir/test; Channels (0 means 3), Height and
// Width give the size every image is converted to, ResizeMode and
// ResizeShorter how (see Preprocess), and LoadSide > 0 keeps the training
// images at load resolution too (LoadPhotoFolders).
type Source struct {
	Kind          string          `json:"kind"`
	Dir           string          `json:"dir,omitempty"`
	TrainDir      string          `json:"train_dir,omitempty"`
	TestDir       string          `json:"test_dir,omitempty"`
	Channels      int             `json:"channels,omitempty"`
	Height        int             `json:"height,omitempty"`
	Width         int             `json:"width,omitempty"`
	ResizeMode    arch.ResizeMode `json:"resize_mode,omitempty"`
	ResizeShorter int             `json:"resize_shorter,omitempty"`
	LoadSide      int             `json:"load_side,omitempty"`
	// SkipUnreadable: imagefolder leaves out images that do not decode
	// (FolderOptions.SkipUnreadable).
	SkipUnreadable bool `json:"skip_unreadable,omitempty"`
}

// Open loads the training and test sets that src names. Errors wrap
// ErrSource for a bad Source, otherwise those of the loader.
func Open(src Source) (train, test *Dataset, err error) {
	switch src.Kind {
	case KindFashionMNIST:
		return LoadFashionMNIST(src.Dir)
	case KindMNIST, KindCIFAR10, KindCIFAR100:
		if src.Dir == "" {
			return nil, nil, fmt.Errorf("data: %w: kind %q needs dir", ErrSource, src.Kind)
		}
		switch src.Kind {
		case KindMNIST:
			return LoadMNIST(src.Dir)
		case KindCIFAR10:
			return LoadCIFAR10(src.Dir)
		}
		return LoadCIFAR100(src.Dir)
	case KindImageFolder:
		trainDir, testDir := src.TrainDir, src.TestDir
		if trainDir == "" && testDir == "" && src.Dir != "" {
			trainDir, testDir = filepath.Join(src.Dir, "train"), filepath.Join(src.Dir, "test")
		}
		if trainDir == "" || testDir == "" {
			return nil, nil, fmt.Errorf("data: %w: imagefolder needs train_dir and test_dir, or dir holding train/ and test/", ErrSource)
		}
		// Loading needs only the geometry; normalisation is applied later.
		p := imaging.Preprocess{Channels: cmp.Or(src.Channels, 3), Height: src.Height, Width: src.Width,
			ResizeMode: src.ResizeMode, ResizeShorter: src.ResizeShorter}
		if err := p.CheckGeometry(); err != nil {
			return nil, nil, fmt.Errorf("data: %w: imagefolder: %w", ErrSource, err)
		}
		return LoadFolders(trainDir, testDir, p, FolderOptions{LoadSide: src.LoadSide, SkipUnreadable: src.SkipUnreadable})
	}
	return nil, nil, fmt.Errorf("data: %w: unknown kind %q, want one of %q", ErrSource, src.Kind, []string{KindFashionMNIST, KindMNIST, KindCIFAR10, KindCIFAR100, KindImageFolder})
}

// DefaultNormalization returns the per-channel mean and standard deviation
// (of pixel/255) used to normalise a dataset kind, new slices each call, or
// nil, nil for an unknown kind. docs/method.md ("Augmentation") asks for
// normalisation with the dataset's channel mean and std:
//
//	kind           mean                       std
//	fashion-mnist  0.2860                     0.3530
//	mnist          0.1307                     0.3081
//	cifar10        (0.4914, 0.4822, 0.4465)   (0.2470, 0.2435, 0.2616)
//	cifar100       (0.5071, 0.4865, 0.4409)   (0.2673, 0.2564, 0.2762)
//	imagefolder    (0.485, 0.456, 0.406)      (0.229, 0.224, 0.225)
//
// Sources: Fashion-MNIST, the pixel statistics of its 60000 training images
// (this package's test recomputes them: 0.28604, 0.35302); MNIST, the
// training-set statistics used by PyTorch's MNIST example; CIFAR-10 and
// CIFAR-100, the per-channel statistics of their 50000 training images;
// imagefolder, ImageNet's statistics as published with torchvision's
// pretrained models.
func DefaultNormalization(kind string) (mean, std []float32) {
	switch kind {
	case KindFashionMNIST:
		return []float32{0.2860}, []float32{0.3530}
	case KindMNIST:
		return []float32{0.1307}, []float32{0.3081}
	case KindCIFAR10:
		return []float32{0.4914, 0.4822, 0.4465}, []float32{0.2470, 0.2435, 0.2616}
	case KindCIFAR100:
		return []float32{0.5071, 0.4865, 0.4409}, []float32{0.2673, 0.2564, 0.2762}
	case KindImageFolder:
		return []float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225}
	}
	return nil, nil
}
