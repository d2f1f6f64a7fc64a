# Included by the top-level CMakeLists.txt before runtime/ (also in a
# runtime-only build, which adds no other folder).
# The same table for the runtime, as plain data: libingot includes the .def
# rows (runtime/cpu.c) and never links ingot_target. This interface library
# exports a folder that holds copies of the .def files only (as
# target/NAME.def), so the runtime sees the table and nothing else of target/.
set(INGOT_TARGET_TABLES_DIR ${PROJECT_BINARY_DIR}/include/ingot_target_tables)
foreach(def target_arches.def target_levels.def target_cpus.def target_features.def target_gpus.def)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${def} ${INGOT_TARGET_TABLES_DIR}/target/${def} COPYONLY)
endforeach()
add_library(ingot_target_tables INTERFACE)
target_include_directories(ingot_target_tables INTERFACE ${INGOT_TARGET_TABLES_DIR})
