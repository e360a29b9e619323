// A test module that loads but defines no op library (no DAGRAD_OP_LIBRARY).
extern "C" int dagrad_test_not_an_op_library() { return 0; }
