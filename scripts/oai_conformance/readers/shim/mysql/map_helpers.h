// Stand-in for MySQL's include/map_helpers.h, for compiling sql/sql_bootstrap.cc alone: its
// unique_ptr_free<T> is a unique_ptr that releases with free() (My_free_functor).
#pragma once
#include <stdlib.h>
#include <memory>
struct My_free_functor {
  void operator()(void *ptr) const { free(ptr); }
};
template <class T>
using unique_ptr_free = std::unique_ptr<T, My_free_functor>;
