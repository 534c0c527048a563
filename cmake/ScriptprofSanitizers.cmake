# ASan+UBSan for the whole tree (the test command builds this configuration too).
if(SCRIPTPROF_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()
