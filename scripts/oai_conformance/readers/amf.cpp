// Runs the OAI AMF's own configuration reader over one file, as its main() does
// (src/oai-amf/main.cpp: Logger::init, amf_config_yaml(file).init(), pre_process(), display(),
// to_amf_config()), and prints what the AMF took from it as one JSON line ("VIEW {...}": the
// converted configuration's own to_json() and its N2 and SBI interfaces). Built by
// oai_conformance/nfbuild.py against the AMF's tree; part of `make oai-conformance`.
#include <arpa/inet.h>

#include <iostream>

#include "amf_config.hpp"
#include "amf_config_yaml.hpp"
#include "logger.hpp"

static std::string ip(const in_addr& a) { return inet_ntoa(a); }

// The database password never leaves the reader: every string equal to it is replaced.
static void redact(nlohmann::json& j, const std::string& secret) {
  if (j.is_string() && !secret.empty() && j.get<std::string>() == secret) j = "<redacted>";
  if (j.is_structured())
    for (auto& item : j) redact(item, secret);
}

// The AMF's code reads its configuration from this global, which its main.cpp defines.
oai::config::amf_config amf_cfg;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: amf-reader <config.yaml>" << std::endl;
    return 2;
  }
  Logger::init("AMF", true, false);
  oai::config::amf_config_yaml yaml(argv[1], true, false);
  if (!yaml.init()) {
    std::cout << "READER init() returned false" << std::endl;
    return 1;
  }
  yaml.pre_process();
  yaml.display();
  oai::config::amf_config& cfg = amf_cfg;
  yaml.to_amf_config(cfg);
  nlohmann::json v;
  cfg.to_json(v["config"]);
  v["n2"] = {{"if_name", cfg.n2.if_name}, {"addr4", ip(cfg.n2.addr4)}, {"port", cfg.n2.port}};
  v["sbi"] = {{"if_name", cfg.sbi.if_name}, {"addr4", ip(cfg.sbi.addr4)}, {"port", cfg.sbi.port}};
  v["smf"] = {{"uri_root", cfg.smf_addr.uri_root}, {"api_version", cfg.smf_addr.api_version}};
  v["database"] = {{"server", cfg.auth_para.mysql_server}, {"user", cfg.auth_para.mysql_user},
                   {"db", cfg.auth_para.mysql_db}, {"password_length", cfg.auth_para.mysql_pass.size()}};
  redact(v, cfg.auth_para.mysql_pass);
  std::cout << "VIEW " << v.dump() << std::endl;
  return 0;
}
