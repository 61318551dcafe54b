// Package kernels makes every training process run the OpenBLAS kernels its processor is best at, and says
// which ones run.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's libopenblas) picks its kernels once, when the library loads,
// from the processor's model number. A model newer than the library falls back to its oldest x86-64 kernels:
// Debian 12's OpenBLAS 0.3.21 runs Prescott (SSE3) kernels on current AVX-512 Xeons, a sixth of the
// processor's single-precision matrix-product speed there (sgemm about 34 against 222-291 GFLOP/s on 2 cores). The
// library reads OPENBLAS_CORETYPE only at load, so the choice cannot be changed in a running process.
//
// Ensure, called first in main (or TestMain), compares the kernels OpenBLAS reports with the best kernel set
// the processor's features allow (Choose) and, when OpenBLAS fell short, sets OPENBLAS_CORETYPE and
// re-executes the program once, with the same arguments and environment, so the library loads again with
// the right kernels. A user's own OPENBLAS_CORETYPE is respected. The processor's features come from
// golang.org/x/sys/cpu (which checks that the operating system saves the vector registers, as OpenBLAS's
// own checks do); the tests cross-check them against /proc/cpuinfo.
//
// Status describes what runs, for run logs, `bicyc doctor` and benchmark headers.
//
// May import: nothing of bicyc (the ground floor).
package kernels
