/* PyTorch's operator entry points, named as torch.profiler names them. */
#ifndef PROF_FORMATS_ATEN_NAMES_H
#define PROF_FORMATS_ATEN_NAMES_H

extern const char *const aten_op_names[];
extern const unsigned aten_op_count;

/* Entry points whose struct the rule in aten_names.c would misname (an overload that
 * makes another operator's name: scatter.reduce is at::_ops::scatter_reduce), sorted. */
struct aten_struct_op {
	const char *entry, *op;
};
extern const struct aten_struct_op aten_struct_ops[];
extern const unsigned aten_struct_op_count;

/* For "at::_ops::<op>_<overload>::call(...)", "aten::<op>" (malloc'd); NULL for any
 * other name. */
char *aten_display_name(const char *demangled);

#endif
