package arch

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // "" means valid
	}{
		{ConvNet.Check(), ""},
		{ResNet18ImageNet.Check(), ""},
		{Backbone("resnet50").Check(), `"resnet50" is not one of convnet, resnet18, resnet18-imagenet`},
		{MLP.Check(), ""},
		{ResidualMLP.Check(), ""},
		// A configuration says linear (with model.linear_bias); a trained
		// network holds linear-bias.
		{LinearBias.Check(), `"linear-bias" is not one of mlp, linear, residual-mlp`},
		{LinearBias.CheckTrained(), ""},
		{Mapper("attention").CheckTrained(), `"attention" is not one of mlp, linear, residual-mlp, linear-bias`},
		{CenterCrop.Check(), ""},
		{ResizeMode("").Check(), `"" is not one of squash, center-crop`},
		{ResizeMode("letterbox").Check(), `"letterbox" is not one of squash, center-crop`},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("unexpected error %v", tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
	if !MLP.Hidden() || !ResidualMLP.Hidden() || Linear.Hidden() || LinearBias.Hidden() {
		t.Error("Hidden: want true for mlp and residual-mlp only")
	}
}
