// The images of module_kernels.cu (a cubin, a fat binary, PTX), built by
// tests/cuda/Makefile into MODULE_IMAGES and embedded in the program's
// read-only data, each followed by a NUL (PTX must end with one):
// mod_cubin .. mod_cubin_end, mod_fatbin .., mod_ptx ..
#pragma once

#define MODULE_STR2(x) #x
#define MODULE_STR(x) MODULE_STR2(x)
#define MODULE_EMBED(sym, file)                                                              \
    ".global " #sym "\n" #sym ":\n.incbin \"" MODULE_STR(MODULE_IMAGES) "/" file "\"\n"          \
    ".byte 0\n.global " #sym "_end\n" #sym "_end:\n"
asm(".section .rodata\n.balign 64\n" MODULE_EMBED(mod_cubin, "k.cubin") ".balign 64\n"
    MODULE_EMBED(mod_fatbin, "k.fatbin") ".balign 64\n" MODULE_EMBED(mod_ptx, "k.ptx") ".previous\n");
extern "C" const char mod_cubin[], mod_cubin_end[], mod_fatbin[], mod_fatbin_end[], mod_ptx[], mod_ptx_end[];
