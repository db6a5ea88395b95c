# The table the layering test (layering_test.py) checks includes against,
# derived from target_link_libraries: src/<dir> may include src/<other> when
# a library or executable compiling a non-test source of <dir> links, directly
# or through the PUBLIC links of what it links, one compiling a source of
# <other>. Written to ${CMAKE_BINARY_DIR}/layering_table.txt once every
# target of the project is defined, one line per allowed pair:
#   <dir> <other> <target> <linked target>
# Link-only dependencies ($<LINK_ONLY:...>, a static library's PRIVATE ones
# seen from its users) allow no include.

set(GDP_LAYERING_TABLE ${CMAKE_BINARY_DIR}/layering_table.txt)

# Sets `out` to the directory under src/ of each non-test source of `target`
# (sources outside src/, generated ones and *_test.cc are left out).
function(gdp_layering_dirs target out)
  set(dirs)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  get_target_property(srcs ${target} SOURCES)
  get_target_property(base ${target} SOURCE_DIR)
  foreach(s IN LISTS srcs)
    if(s MATCHES "\\$<" OR s MATCHES "_test\\.cc$")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH s BASE_DIRECTORY ${base} NORMALIZE
               OUTPUT_VARIABLE abs)
    cmake_path(IS_PREFIX GDP_LAYERING_SRC ${abs} NORMALIZE inside)
    if(NOT inside)
      continue()
    endif()
    cmake_path(RELATIVE_PATH abs BASE_DIRECTORY ${GDP_LAYERING_SRC}
               OUTPUT_VARIABLE rel)
    if(rel MATCHES "^([^/]+)/")
      list(APPEND dirs ${CMAKE_MATCH_1})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES dirs)
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()

# Sets `out` to the project's own targets (not imported ones) that
# `target` links: all of its own links, then the PUBLIC (interface) links of
# each of those, transitively.
function(gdp_layering_closure target out)
  get_target_property(first ${target} LINK_LIBRARIES)
  set(seen)
  set(pending)
  foreach(l IN LISTS first)
    list(APPEND pending ${l})
  endforeach()
  while(pending)
    list(POP_FRONT pending l)
    if(l MATCHES "\\$<" OR NOT TARGET ${l})
      continue()
    endif()
    get_target_property(imported ${l} IMPORTED)
    get_target_property(aliased ${l} ALIASED_TARGET)
    if(aliased)
      set(l ${aliased})
    endif()
    if(imported OR l IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${l})
    get_target_property(next ${l} INTERFACE_LINK_LIBRARIES)
    if(next)
      list(APPEND pending ${next})
    endif()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# Every target defined in `dir` and the directories below it.
function(gdp_layering_targets dir out)
  get_directory_property(all DIRECTORY ${dir} BUILDSYSTEM_TARGETS)
  get_directory_property(subs DIRECTORY ${dir} SUBDIRECTORIES)
  foreach(s IN LISTS subs)
    gdp_layering_targets(${s} more)
    list(APPEND all ${more})
  endforeach()
  set(${out} "${all}" PARENT_SCOPE)
endfunction()

function(gdp_write_layering_table)
  set(GDP_LAYERING_SRC ${PROJECT_SOURCE_DIR}/src)
  gdp_layering_targets(${PROJECT_SOURCE_DIR} targets)
  set(lines)
  foreach(t IN LISTS targets)
    gdp_layering_dirs(${t} own)
    if(NOT own)
      continue()
    endif()
    gdp_layering_closure(${t} linked)
    foreach(l IN LISTS linked)
      gdp_layering_dirs(${l} theirs)
      foreach(d IN LISTS own)
        foreach(o IN LISTS theirs)
          if(NOT d STREQUAL o)
            list(APPEND lines "${d} ${o} ${t} ${l}")
          endif()
        endforeach()
      endforeach()
    endforeach()
  endforeach()
  list(SORT lines)
  list(JOIN lines "\n" text)
  # CMAKE_BINARY_DIR: this runs in the top directory, where
  # GDP_LAYERING_TABLE is not set.
  file(WRITE ${CMAKE_BINARY_DIR}/layering_table.txt "${text}\n")
endfunction()

cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR}
               CALL gdp_write_layering_table)
