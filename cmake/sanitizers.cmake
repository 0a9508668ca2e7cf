# COOLBENCH_SANITIZE=thread|address|undefined builds everything with that
# sanitizer (host code only). scripts/test.sh runs the threaded tests under
# ThreadSanitizer this way.
set(COOLBENCH_SANITIZE "" CACHE STRING "Sanitizer for host code: thread, address or undefined")
if(COOLBENCH_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${COOLBENCH_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${COOLBENCH_SANITIZE})
endif()
