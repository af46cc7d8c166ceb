// Runs the OAI SMF's own configuration reader over one file, as its main() does
// (src/oai_smf/main.cpp: Logger::init, smf_config(file).init(), which also converts it into the
// structure the SMF runs on, then display()), and prints what the SMF took from it as one JSON
// line ("VIEW {...}": its own to_json() and the converted fields). Built by
// oai_conformance/nfbuild.py against the SMF's tree; part of `make oai-conformance`.
#include <arpa/inet.h>

#include <iostream>

#include "logger.hpp"
#include "smf_config.hpp"

static std::string ip(const in_addr& a) { return inet_ntoa(a); }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: smf-reader <config.yaml>" << std::endl;
    return 2;
  }
  Logger::init("smf", true, false);
  oai::config::smf::smf_config cfg(argv[1], true, false);
  if (!cfg.init()) {
    cfg.display();
    std::cout << "READER init() returned false" << std::endl;
    return 1;
  }
  cfg.display();
  nlohmann::json v;
  cfg.to_json(v["config"]);
  v["n4"] = {{"if_name", cfg.n4.if_name}, {"addr4", ip(cfg.n4.addr4)}, {"port", cfg.n4.port}};
  v["sbi"] = {{"if_name", cfg.sbi.if_name}, {"addr4", ip(cfg.sbi.addr4)}, {"port", cfg.sbi.port}};
  v["register_nrf"] = cfg.register_nrf;
  v["http_version"] = cfg.http_version;
  v["use_local_subscription_info"] = cfg.use_local_subscription_info;
  v["use_local_pcc_rules"] = cfg.use_local_pcc_rules;
  v["local_n3_addr"] = cfg.local_n3_addr;
  v["upfs"] = nlohmann::json::array();
  for (const auto& n : cfg.upfs) v["upfs"].push_back(n.toString());
  v["ue_mtu"] = cfg.smf()->get_ue_mtu();
  v["amf_url"] = cfg.get_nf("amf") ? cfg.get_nf("amf")->get_url() : "";
  v["dnns"] = nlohmann::json::array();
  for (const auto& d : cfg.dnns) v["dnns"].push_back(d.first);
  std::cout << "VIEW " << v.dump() << std::endl;
  return 0;
}
