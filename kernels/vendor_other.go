//go:build !amd64

package kernels

// cpuVendor is empty off x86-64: OpenBLAS's kernel sets there are not chosen by this package (Best finds no
// x86 feature and Choose keeps OpenBLAS's choice).
func cpuVendor() string { return "" }
