# ingot-measure (driver/measure_main.c): the run-only measuring program that
# the ssh runner copies to another machine. It links only the runtime (no
# compiler stage), so a runtime-only build (-DINGOT_RUNTIME_ONLY=ON, also with
# a cross compiler for a board) makes it too. Lands beside `ingot`, where the
# driver looks for it, and is installed there.
add_executable(ingot-measure ${PROJECT_SOURCE_DIR}/driver/measure_main.c ${PROJECT_SOURCE_DIR}/driver/measure_core.c)
target_link_libraries(ingot-measure PRIVATE ingot_runtime m)
