// A test module that needs a symbol no program defines, as a module built for a dagrad other
// than the loading program's would: dlopen refuses it, and the error says why.
extern "C" int dagrad_test_symbol_nobody_defines();
extern "C" int dagrad_op_library_abi() { return dagrad_test_symbol_nobody_defines(); }
