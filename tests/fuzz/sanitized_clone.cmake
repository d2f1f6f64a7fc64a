# ingot_sanitized_clone(TARGET SUFFIX FLAGS DEFINITIONS)
#
# Makes <target>_<suffix>: a static library built from the same sources as
# TARGET with extra compile FLAGS (a list, e.g. "-fsanitize=address") and
# preprocessor DEFINITIONS, linking the clones of the ingot_* libraries TARGET
# links (cloned the same way, once each) and everything else as TARGET does.
# Used for the sanitizer builds of the fuzz replay and the stress tests, so
# they need no second configure of the whole tree and follow the folders'
# own source lists as those change. Generated code (ingot_onnx_proto) is not
# cloned, nor are interface libraries.
function(ingot_sanitized_clone target suffix flags definitions)
  set(clone ${target}_${suffix})
  if(TARGET ${clone})
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(links ${target} LINK_LIBRARIES)
  get_target_property(includes ${target} INCLUDE_DIRECTORIES)
  get_target_property(options ${target} COMPILE_OPTIONS)
  set(absolute_sources)
  foreach(src ${sources})
    if(IS_ABSOLUTE ${src})
      list(APPEND absolute_sources ${src})
    else()
      list(APPEND absolute_sources ${source_dir}/${src})
    endif()
  endforeach()
  set(clone_links)
  if(links)
    foreach(lib ${links})
      set(lib_type "")
      if(TARGET ${lib})
        get_target_property(lib_type ${lib} TYPE)
      endif()
      # Interface libraries (headers only, e.g. ingot_target_tables) are used as they are.
      if(TARGET ${lib} AND lib MATCHES "^ingot_" AND NOT lib STREQUAL "ingot_onnx_proto"
         AND NOT lib_type STREQUAL "INTERFACE_LIBRARY")
        ingot_sanitized_clone(${lib} ${suffix} "${flags}" "${definitions}")
        list(APPEND clone_links ${lib}_${suffix})
      else()
        list(APPEND clone_links ${lib})
      endif()
    endforeach()
  endif()
  add_library(${clone} STATIC EXCLUDE_FROM_ALL ${absolute_sources})
  if(includes)
    target_include_directories(${clone} PRIVATE ${includes})
  endif()
  if(options)
    target_compile_options(${clone} PRIVATE ${options})
  endif()
  target_compile_options(${clone} PRIVATE ${flags})
  if(definitions)
    target_compile_definitions(${clone} PRIVATE ${definitions})
  endif()
  target_link_libraries(${clone} PUBLIC ${clone_links})
  # Generated sources (if any) come from the original's custom commands.
  add_dependencies(${clone} ${target})
endfunction()
