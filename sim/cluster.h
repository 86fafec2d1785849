/*
 * cluster.h -- several replicas on one clock: a router in front of N
 * identical engines, or a disaggregated deployment (a prefill pool and a
 * decode pool joined by a KV transfer link).
 *
 * The cluster owns the event queue.  Arrivals are routed (round robin,
 * least outstanding requests or tokens, or the replica holding the longest
 * cached prefix); each replica runs its own scheduler and KV pool.  With
 * disaggregation a finished prefill's KV travels to a decode replica in
 * bytes / bandwidth + latency: the request queues at a decode replica,
 * the transfer starts once that replica has reserved the KV, and both
 * sides hold it until the transfer ends.  The first
 * token is emitted by the prefill side at the end of its prefill, or, with
 * "first_token": "decode", when the transfer completes (TTFT then includes
 * the transfer).  One replica with no disaggregation behaves exactly like
 * engine_run.  With attention data parallelism the replicas form groups of
 * attention_dp ranks that step in lock-step (cluster.c poll_group).
 */
#ifndef SERVESIM_CLUSTER_H
#define SERVESIM_CLUSTER_H

#include "metrics.h"
#include "scenario.h"

typedef struct Cluster Cluster;

Cluster *cluster_new(Scenario *s, const MetricsSink *sink, Err *e);
int cluster_run(Cluster *c, Err *e);
void cluster_free(Cluster *c);
/* Run data for the metrics: per-iteration records only with one replica. */
void cluster_rundata(const Cluster *c, RunData *rd);
/* The statistics of a finished run: the scenario's metrics configuration
 * (its SLO classes in slo_table, METRICS_CLS_MAX entries), the run data
 * and the summary, as every command reports them. */
void cluster_summarize(const Cluster *c, const Scenario *s, Slo *slo_table, MetricsCfg *mc, RunData *rd,
                       Summary *sum);
uint32_t cluster_replicas(const Cluster *c);
const Engine *cluster_engine(const Cluster *c, uint32_t i);
const EngineStats *cluster_stats(const Cluster *c); /* aggregated over replicas, after cluster_run */
/* The replicas share one pool of request records (slots.h), pulled
 * through the router as simulated time reaches them -- from the
 * scenario's stream (s->wl_stream), retired to s->stream_retire as they
 * leave, or from its workload held whole (reqarray.h), written back into
 * s->wl.reqs; the requests taken and the most records held at once. */
uint64_t cluster_stream_pulled(const Cluster *c);
Slots *cluster_stream_slots(Cluster *c);
uint32_t cluster_live_peak(const Cluster *c);

#endif
