# Runs at every build (cmake -P), so git_sha/git_dirty follow commits without reconfiguring.
# configure_file rewrites the header only when its content changes, so unchanged builds
# do not recompile.
execute_process(COMMAND git rev-parse HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE sha_rc)
if(NOT sha_rc EQUAL 0 OR GIT_SHA STREQUAL "")
  set(GIT_SHA "unknown")
endif()
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(dirty STREQUAL "")
  set(GIT_DIRTY false)
else()
  set(GIT_DIRTY true)
endif()
configure_file(${TEMPLATE} ${OUT} @ONLY)
