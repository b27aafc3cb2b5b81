# Sources of record execution, named once for every build that compiles them
# (the top-level Makefile, tests/unit, tests/fuzz): paths from the
# repository root; EXEC_GEN are generated into build/gen (make gen).
EXEC_SRC := host-backend/exec.c host-backend/exec_check.c host-backend/exec_objects.c \
            host-backend/exec_memory.c host-backend/exec_module.c host-backend/exec_stream.c \
            host-backend/exec_graph.c
EXEC_GEN := exec_ops.gen.c
