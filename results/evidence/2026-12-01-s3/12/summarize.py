import json,sys
d=json.load(open(sys.argv[1]))
c=d["context"]
print("target",c.get("target"),"| broker_cost:",c.get("broker_cost"),"| client_cost:",c.get("client_cost"))
rows={}
for b in d["benchmarks"]:
    if b.get("run_type")!="iteration": continue
    rows.setdefault(b["run_name"],[]).append(b)
import statistics as st
def med(rs,k):
    v=[r[k] for r in rs if k in r]
    return st.median(v) if v else float('nan')
for n,rs in rows.items():
    err=[r.get("error_message") for r in rs if r.get("error_occurred")]
    gap=max((r.get("cpu_accounting_gap",float('nan')) for r in rs), default=float('nan'))
    short=n.replace("/real_time","")
    print(f"{short}\n   n={len(rs)} err={err} rec/s={med(rs,'items_per_second'):.0f} cpu_us/rec={med(rs,'cpu_us_per_record'):.3f} app={med(rs,'app_cpu_us_per_record'):.3f} rdk={med(rs,'rdkafka_cpu_us_per_record'):.3f} cpu_us/MiB={med(rs,'cpu_us_per_mb'):.0f} max_gap={gap:.5f} rss={med(rs,'peak_rss_mb'):.0f}MiB heap/inflight={med(rs,'heap_bytes_per_inflight_record'):.0f} vcs/1k={med(rs,'voluntary_switches_per_1000_records'):.2f} ivcs/1k={med(rs,'involuntary_switches_per_1000_records'):.2f} broker_cpu_us/MiB={med(rs,'broker_cpu_us_per_mb'):.0f} broker_log_B/MiB={med(rs,'broker_log_bytes_per_mb'):.0f} mock_cpu_us/MiB={med(rs,'mock_cpu_us_per_mb'):.0f}")
    print(f"   p50={med(rs,'p50_us'):.0f} delivery_p50={med(rs,'delivery_p50_us'):.0f} p99={med(rs,'p99_us'):.0f} delivery_p99={med(rs,'delivery_p99_us'):.0f} int_lat p50/p99={med(rs,'int_latency_p50_us'):.0f}/{med(rs,'int_latency_p99_us'):.0f} outbuf={med(rs,'outbuf_latency_p50_us'):.0f}/{med(rs,'outbuf_latency_p99_us'):.0f} rtt={med(rs,'rtt_p50_us'):.0f}/{med(rs,'rtt_p99_us'):.0f} throttle={med(rs,'throttle_p50_ms'):.1f}/{med(rs,'throttle_p99_ms'):.1f} achieved={med(rs,'achieved_rate'):.0f}")
