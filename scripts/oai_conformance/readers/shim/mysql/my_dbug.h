// Stand-in for MySQL's include/my_dbug.h: DBUG_ASSERT is assert() (a debug build's behaviour).
#pragma once
#include <assert.h>
#define DBUG_ASSERT(A) assert(A)
