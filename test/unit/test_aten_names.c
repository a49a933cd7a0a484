/* PyTorch's entry points named as torch.profiler names them (formats/symbols/aten_names.c
 * with the generated table of torch 1.13 and 2.15): operators and in-place ones, ops new
 * in 2.x that the 1.13 table misnamed after a shorter op, the structs the rule alone
 * would misname, entry points unknown to the table (a newer torch's) still readable, and
 * names that are not entry points left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/symbols/aten_names.h"
#include "formats/symbols/demangle.h"

static void expect(const char *demangled, const char *want)
{
	char *got = aten_display_name(demangled);
	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_known_ops(void **state)
{
	(void)state;
	expect("at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar "
	       "const&)",
	       "aten::add");
	expect("at::_ops::add__Tensor::call(at::Tensor&, at::Tensor const&, c10::Scalar "
	       "const&)",
	       "aten::add_");
	expect("at::_ops::conv2d::call(at::Tensor const&)", "aten::conv2d");
	expect("at::_ops::sum_dim_IntList::call", "aten::sum");
	expect("at::_ops::max_pool2d_with_indices_backward_grad_input::call()",
	       "aten::max_pool2d_with_indices_backward");
}

static void test_mangled(void **state)
{
	(void)state;
	/* as libtorch_cpu.so exports it (2.15), through the demangler as the model reads it */
	static const char sym[] =
		"_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE";
	char *d = demangle_name(sym, sizeof sym - 1);
	assert_non_null(d);
	expect(d, "aten::add");
	free(d);
}

static void test_ops_of_2x(void **state)
{
	(void)state;
	/* not in 1.13: its table named them after the shorter op they start with */
	expect("at::_ops::masked_scatter_backward::call(at::Tensor const&)",
	       "aten::masked_scatter_backward");
	expect("at::_ops::get_autocast_dtype::call(c10::DeviceType)",
	       "aten::get_autocast_dtype");
	expect("at::_ops::_scaled_dot_product_flash_attention_for_cpu::call()",
	       "aten::_scaled_dot_product_flash_attention_for_cpu");
}

static void test_rule_exceptions(void **state)
{
	(void)state;
	/* scatter.reduce's struct is another op's name (scatter_reduce.two's: _two) */
	expect("at::_ops::scatter_reduce::call(at::Tensor const&)", "aten::scatter");
	expect("at::_ops::scatter_reduce_out::call(at::Tensor const&)", "aten::scatter");
	expect("at::_ops::scatter_reduce_two::call(at::Tensor const&)", "aten::scatter_reduce");
	for (unsigned i = 1; i < aten_struct_op_count; i++)
		assert_true(strcmp(aten_struct_ops[i - 1].entry, aten_struct_ops[i].entry) < 0);
}

static void test_unknown_entry_points(void **state)
{
	(void)state;
	/* a newer torch: an overload the table has not seen keeps its op's name, an op it has
	 * not seen its whole struct name, readable either way */
	expect("at::_ops::linear_new_overload::call(at::Tensor const&)", "aten::linear");
	expect("at::_ops::zz_future_op_Tensor::call(at::Tensor const&)",
	       "aten::zz_future_op_Tensor");
	expect("at::_ops::zz_future_op::call", "aten::zz_future_op");
	for (unsigned i = 1; i < aten_op_count; i++)
		assert_true(strcmp(aten_op_names[i - 1], aten_op_names[i]) < 0);
	assert_true(aten_op_count > 1700);
}

static void test_not_entry_points(void **state)
{
	(void)state;
	expect("at::_ops::add_Tensor::redispatch(c10::DispatchKeySet)", 0);
	expect("at::_ops::add_Tensor::callx()", 0);
	expect("at::_ops::add_Tensor", 0);
	expect("at::native::add(at::Tensor const&)", 0);
	expect("MXNDArrayCreateEx", 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_ops),
		cmocka_unit_test(test_mangled),
		cmocka_unit_test(test_ops_of_2x),
		cmocka_unit_test(test_rule_exceptions),
		cmocka_unit_test(test_unknown_entry_points),
		cmocka_unit_test(test_not_entry_points),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
