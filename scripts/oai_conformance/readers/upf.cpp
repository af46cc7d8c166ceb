// Runs the OAI UPF's own configuration reader over one file, as its main() does
// (src/oai_upf/main.cpp: Logger::init, upf_config_yaml(file).init(), pre_process(), to_upf_config(),
// display()), and prints what the UPF took from it as one JSON line ("VIEW {...}").
// Built by oai_conformance/nfreader.py against the UPF's tree; part of `make oai-conformance`.
#include <arpa/inet.h>

#include <iostream>

#include "logger.hpp"
#include "upf_config.hpp"
#include "upf_config_yaml.hpp"

static std::string ip(const in_addr& a) { return inet_ntoa(a); }

static nlohmann::json iface(const oai::config::interface_cfg_t& i) {
  return {{"if_name", i.if_name}, {"addr4", ip(i.addr4)}, {"port", i.port}, {"mtu", i.mtu}};
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: upf-reader <config.yaml>" << std::endl;
    return 2;
  }
  Logger::init("upf", true, false);
  oai::config::upf_config_yaml yaml(argv[1], true, false);
  if (!yaml.init()) {
    std::cout << "READER init() returned false" << std::endl;
    return 1;
  }
  yaml.pre_process();
  oai::config::upf_config cfg;
  yaml.to_upf_config(cfg);
  yaml.display();
  nlohmann::json v;
  v["smfs"] = nlohmann::json::array();
  for (const auto& n : cfg.smfs) v["smfs"].push_back(ip(n.u1.ipv4_address));
  v["n3"] = iface(cfg.n3);
  v["n4"] = iface(cfg.n4);
  v["n6"] = iface(cfg.n6);
  v["sbi"] = iface(cfg.sbi);
  v["register_nrf"] = cfg.register_nrf;
  v["http_version"] = cfg.http_version;
  v["enable_snat"] = cfg.enable_snat;
  v["enable_bpf_datapath"] = cfg.enable_bpf_datapath;
  v["remote_n6"] = ip(cfg.remote_n6);
  v["pdns"] = nlohmann::json::array();
  for (const auto& p : cfg.pdns)
    v["pdns"].push_back(ip(p.network_ipv4) + "/" + std::to_string(p.prefix_ipv4));
  v["snssai_upf_info_list"] = nlohmann::json::array();
  for (const auto& s : cfg.upf_info.snssai_upf_info_list) {
    nlohmann::json item = {{"sst", static_cast<unsigned>(s.snssai.sst)}, {"sd", static_cast<uint32_t>(s.snssai.sd)}, {"dnns", nlohmann::json::array()}};
    for (const auto& d : s.dnn_upf_info_list) item["dnns"].push_back(d.dnn);
    v["snssai_upf_info_list"].push_back(item);
  }
  v["interface_upf_info_list"] = nlohmann::json::array();
  for (const auto& i : cfg.upf_info.interface_upf_info_list) {
    nlohmann::json item = {{"type", i.interface_type}, {"ipv4", nlohmann::json::array()}};
    for (const auto& a : i.ipv4_addresses) item["ipv4"].push_back(ip(a));
    v["interface_upf_info_list"].push_back(item);
  }
  v["dnns"] = nlohmann::json::array();
  for (const auto& d : yaml.get_dnns())
    if (d.is_set()) v["dnns"].push_back(d.get_dnn());
  std::cout << "VIEW " << v.dump() << std::endl;
  return 0;
}
