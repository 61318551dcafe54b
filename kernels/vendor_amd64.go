package kernels

// #include <cpuid.h>
// #include <string.h>
// static void cpu_vendor(char out[13]) {
// 	unsigned int a = 0, b = 0, c = 0, d = 0;
// 	memset(out, 0, 13);
// 	if (__get_cpuid(0, &a, &b, &c, &d)) {
// 		memcpy(out, &b, 4);
// 		memcpy(out + 4, &d, 4);
// 		memcpy(out + 8, &c, 4);
// 	}
// }
import "C"

// cpuVendor returns the CPUID vendor string, "GenuineIntel" or "AuthenticAMD" for instance.
func cpuVendor() string {
	var v [13]C.char
	C.cpu_vendor(&v[0])
	return C.GoString(&v[0])
}
