// Stand-in for MySQL's include/m_string.h: native_strncasecmp is the C library's strncasecmp (the real header also brings stdio).
#pragma once
#include <stdio.h>
#include <strings.h>
static inline int native_strncasecmp(const char *s1, const char *s2, size_t n) { return strncasecmp(s1, s2, n); }
