/* The patches' fatbinary (patches.cu, built by CMake) as read-only data of
   libovl_measure.so, for sanitizerAddPatches: nothing to find at run time. */
    .section .rodata
    .balign 16
    .globl overlap_measure_patches
    .hidden overlap_measure_patches
    .type overlap_measure_patches, @object
overlap_measure_patches:
    .incbin OVERLAP_PATCHES_FATBIN
    .size overlap_measure_patches, . - overlap_measure_patches
    .section .note.GNU-stack, "", @progbits
