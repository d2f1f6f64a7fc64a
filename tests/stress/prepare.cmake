# cmake -DINGOT=... -DMODEL=... -DKEY=... -DOUT=... -P prepare.cmake
# Compiles MODEL into OUT and signs it with KEY.
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${INGOT} compile ${MODEL} -o ${OUT} -q --input-shape input=4x1x8x8
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ingot compile failed (${rc})")
endif()
execute_process(COMMAND ${INGOT} sign ${OUT} --key ${KEY} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ingot sign failed (${rc})")
endif()
