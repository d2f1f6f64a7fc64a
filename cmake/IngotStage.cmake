# The layering of DESIGN.md, enforced by the build.
#
# Each stage is one library whose public headers are named here, and only
# these are visible to the stages that link it: they are linked (symbolic
# links, so edits show at once) into <build>/include/<target>/<folder>/, and
# that folder is the target's only PUBLIC include directory. A stage's own
# sources include its private headers by their bare name ("lower_internal.h",
# found beside the including file); a header of a stage that is not linked is
# not found, so a wrong include fails the build. The source tree itself is on
# no include path (tests/ alone may look inside stages).
#
#   ingot_stage_headers(TARGET FOLDER HEADER...)
function(ingot_stage_headers target folder)
  set(root ${PROJECT_BINARY_DIR}/include/${target})
  file(MAKE_DIRECTORY ${root}/${folder})
  foreach(header ${ARGN})
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${folder}/${header})
      message(FATAL_ERROR "ingot_stage_headers(${target}): ${folder}/${header} does not exist")
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder}/${header} ${root}/${folder}/${header} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()
