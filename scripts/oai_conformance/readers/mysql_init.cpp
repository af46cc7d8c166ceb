// Reads MySQL's init file the way the server does at start-up (sql/bootstrap.cc: one
// read_bootstrap_query() per statement, over a file read with fgets), with MySQL's own
// sql/sql_bootstrap.cc compiled from OAI_SRC/mysql-server. Prints "STATEMENTS <n> LONGEST <bytes>"
// and exits 0, or prints MySQL's own error report and exits 1. Part of `make oai-conformance`.
#include <stdio.h>

#include <iostream>
#include <vector>

#include "sql/sql_bootstrap.h"

struct MYSQL_FILE {
  FILE *m_file;
};

static char *file_fgets(char *buffer, size_t size, MYSQL_FILE *input, int *error) {
  char *line = fgets(buffer, static_cast<int>(size), input->m_file);
  *error = (line == nullptr && ferror(input->m_file)) ? 1 : 0;
  return line;
}

static void log_error(const char *message) { std::cout << "MYSQL " << message; }

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: mysql-init-reader <init-file>" << std::endl;
    return 2;
  }
  MYSQL_FILE input{fopen(argv[1], "r")};
  if (input.m_file == nullptr) {
    perror(argv[1]);
    return 2;
  }
  std::vector<char> query(MAX_BOOTSTRAP_QUERY_SIZE);
  bootstrap_parser_state state;
  state.init(argv[1]);
  size_t count = 0, longest = 0;
  for (;;) {
    size_t length = 0;
    int rc = read_bootstrap_query(query.data(), &length, &input, file_fgets, &state);
    if (rc == READ_BOOTSTRAP_EOF) break;
    if (rc != READ_BOOTSTRAP_SUCCESS) {
      state.report_error_details(log_error);
      return 1;
    }
    count++;
    if (length > longest) longest = length;
  }
  std::cout << "STATEMENTS " << count << " LONGEST " << longest << " LIMIT " << MAX_BOOTSTRAP_QUERY_SIZE
            << std::endl;
  return 0;
}
