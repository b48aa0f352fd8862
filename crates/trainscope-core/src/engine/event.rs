//! The discrete-event core: tasks with dependencies run on FIFO resources
//! (streams), in integer nanoseconds, deterministically. It knows nothing
//! about pipelines: the builder ([`crate::engine::build`]) turns a job into a
//! [`TaskGraph`]; this module runs it.
//!
//! Model:
//! - A task needs 0, 1 or 2 resources at once (a stage-to-stage transfer
//!   holds the sender's send stream and the receiver's receive stream) and
//!   depends on earlier tasks, each edge with a lag (dependent may start at
//!   dependency end + lag). Dependencies always point to tasks created
//!   earlier, so the graph is acyclic by construction.
//! - A task becomes ready when its last dependency ends (+ lag); it then
//!   queues on each of its resources and starts as soon as it is first in
//!   every one of its queues and all of them are free. Queues are
//!   first-come first-served; since a task enters all its queues at the same
//!   instant and that order is global, there is no circular wait.
//! - Gang tasks (one collective on several simulated ranks) hold their
//!   resources once armed and all start together when the last member arms.
//! - Flow tasks have a fixed part and a NIC part; the NIC part slows down
//!   while the NICs of a node are shared: on each node the load is the sum
//!   of the weights of the active flows, and a flow progresses at
//!   1 / max(1, load / slots) (equal sharing), with the worst of its nodes.
//!   Rates are recomputed whenever a flow starts or ends on a node.
//!
//! Ordering contract (what makes runs reproducible):
//! 1. Events are processed in increasing time; events at the same time in
//!    the order they were scheduled (a global sequence number: FIFO).
//! 2. At start, every task without dependencies gets a ready event at 0, in
//!    task-id order.
//! 3. When a task finishes, in this order: its NIC flow is removed (other
//!    flows re-rated), its resources are freed, each dependent (in task-id
//!    order) whose last dependency this was gets a ready event at its ready
//!    time, then each freed resource (in the task's resource order) starts
//!    the first task of its queue if that task can start.
//! 4. A ready event appends the task to its resources' queues and tries to
//!    start it. Starting never takes time and never goes through the queue
//!    of events; finishing always does (even for zero durations).
//! 5. Ties in choosing the task that "made" another start (its binding, used
//!    for critical paths) go to the latest-ending dependency, the first
//!    declared among equals, and to the resource's previous occupant only
//!    when it freed the resource strictly later.
//!
//! Two shortcuts keep that order exactly while doing less work. The queue
//! of events is a priority queue on (time, sequence number) plus a FIFO of
//! the events scheduled at the current time (most ready events: a
//! dependency without lag readies its dependents at its own end); those
//! come after every queued event of the same time, which was scheduled
//! earlier, and among themselves in the order scheduled. A ready task
//! whose resources are all free with empty queues takes them at once: it
//! would head every queue and start. [`Engine::with_reference_queue`]
//! runs without both (the tests compare the two, field for field).

use crate::engine::{scale, SimError};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Index of a task.
pub type TaskId = u32;
/// Index of a resource (stream).
pub type ResourceId = u32;
/// Index of a node (NIC pool).
pub type NodeId = u32;
/// Index of a gang.
pub type GangId = u32;
/// "No value" for the u32 indices.
pub const NONE: u32 = u32::MAX;

/// A dependency edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dep {
    pub task: TaskId,
    /// The dependent may start this long after `task` ends, ns.
    pub lag_ns: u64,
}

impl Dep {
    /// No lag.
    pub fn on(task: TaskId) -> Dep {
        Dep { task, lag_ns: 0 }
    }
}

/// The NIC part of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowDef {
    /// Part of the duration that runs on the NICs (at full share), ns.
    pub nic_ns: u64,
    /// Up to two (node, weight) pairs; unused slots have node [`NONE`].
    pub nodes: [(NodeId, u32); 2],
}

/// One task to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskDef {
    /// Up to two resources held while running; unused slots are [`NONE`].
    pub resources: [ResourceId; 2],
    /// Duration without contention, ns.
    pub duration_ns: u64,
    pub flow: Option<FlowDef>,
    pub gang: Option<GangId>,
}

impl TaskDef {
    /// A task of fixed duration on one resource.
    pub fn on(resource: ResourceId, duration_ns: u64) -> TaskDef {
        TaskDef {
            resources: [resource, NONE],
            duration_ns,
            flow: None,
            gang: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct StaticTask {
    resources: [ResourceId; 2],
    duration_ns: u64,
    flow: u32,
    gang: u32,
    dep_lo: u32,
    dep_hi: u32,
}

/// A task graph under construction (and, once built, the engine's input).
#[derive(Debug, Clone, Default)]
pub struct TaskGraph {
    tasks: Vec<StaticTask>,
    deps: Vec<Dep>,
    flows: Vec<FlowDef>,
    resources: u32,
    node_slots: Vec<u32>,
    gang_sizes: Vec<u32>,
    /// Transient slow-downs ([`crate::engine::faults::Window`]): windows of
    /// time in which a task runs slower, each a disjoint ascending list of
    /// (start, end, factor).
    windows: Vec<Vec<(u64, u64, f64)>>,
    /// Per task, its index in `windows` or [`NONE`]; empty when no task has
    /// one (the loop then never looks).
    task_windows: Vec<u32>,
}

impl TaskGraph {
    /// An empty graph.
    pub fn new() -> TaskGraph {
        TaskGraph::default()
    }

    /// A new resource.
    pub fn add_resource(&mut self) -> ResourceId {
        self.resources += 1;
        self.resources - 1
    }

    /// A new NIC pool of `slots` (GPU) slots.
    pub fn add_node(&mut self, slots: u32) -> NodeId {
        self.node_slots.push(slots.max(1));
        (self.node_slots.len() - 1) as u32
    }

    /// A new gang (its size grows as member tasks are added).
    pub fn add_gang(&mut self) -> GangId {
        self.gang_sizes.push(0);
        (self.gang_sizes.len() - 1) as u32
    }

    /// A set of slow windows: disjoint, ascending (start, end, factor),
    /// each factor at least 1.
    pub fn add_windows(&mut self, windows: Vec<(u64, u64, f64)>) -> u32 {
        self.windows.push(windows);
        (self.windows.len() - 1) as u32
    }

    /// Task `task` (a fixed-duration task, no flow) runs under the windows
    /// `windows` ([`TaskGraph::add_windows`]): the part of it inside one
    /// runs that window's factor times as long.
    pub fn set_windows(&mut self, task: TaskId, windows: u32) {
        if self.task_windows.len() < self.tasks.len() {
            self.task_windows.resize(self.tasks.len(), NONE);
        }
        if let Some(w) = self.task_windows.get_mut(task as usize) {
            *w = windows;
        }
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// True when there are no tasks.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Add a task depending on `deps` (all earlier tasks).
    pub fn add_task(&mut self, def: TaskDef, deps: &[Dep]) -> Result<TaskId, SimError> {
        let id = self.tasks.len();
        if id >= NONE as usize - 1 || self.deps.len() + deps.len() >= NONE as usize {
            return Err(SimError::TooLarge("more than 4 billion tasks".to_string()));
        }
        let id = id as u32;
        for r in def.resources {
            if r != NONE && r >= self.resources {
                return Err(SimError::InvalidJob(format!(
                    "task {id} uses unknown resource {r}"
                )));
            }
        }
        if def.resources[0] != NONE && def.resources[0] == def.resources[1] {
            return Err(SimError::InvalidJob(format!(
                "task {id} holds resource {} twice",
                def.resources[0]
            )));
        }
        for d in deps {
            if d.task >= id {
                return Err(SimError::InvalidJob(format!(
                    "task {id} depends on task {} that is not earlier",
                    d.task
                )));
            }
        }
        let flow = match def.flow {
            Some(f) => {
                for (n, _) in f.nodes {
                    if n != NONE && n as usize >= self.node_slots.len() {
                        return Err(SimError::InvalidJob(format!(
                            "task {id} uses unknown node {n}"
                        )));
                    }
                }
                self.flows.push(FlowDef {
                    nic_ns: f.nic_ns.min(def.duration_ns),
                    ..f
                });
                (self.flows.len() - 1) as u32
            }
            None => NONE,
        };
        let gang = match def.gang {
            Some(g) => {
                let Some(size) = self.gang_sizes.get_mut(g as usize) else {
                    return Err(SimError::InvalidJob(format!(
                        "task {id} is in unknown gang {g}"
                    )));
                };
                *size += 1;
                g
            }
            None => NONE,
        };
        let dep_lo = self.deps.len() as u32;
        self.deps.extend_from_slice(deps);
        self.tasks.push(StaticTask {
            resources: def.resources,
            duration_ns: def.duration_ns,
            flow,
            gang,
            dep_lo,
            dep_hi: self.deps.len() as u32,
        });
        Ok(id)
    }

    /// The dependencies of `task`.
    pub fn deps_of(&self, task: TaskId) -> &[Dep] {
        match self.tasks.get(task as usize) {
            Some(t) => &self.deps[t.dep_lo as usize..t.dep_hi as usize],
            None => &[],
        }
    }
}

/// When work of `ns` (at full speed) that starts at `start_ns` ends under
/// `windows` (disjoint, ascending (start, end, factor)): inside a window it
/// runs at `1 / factor` of its speed. A task wholly inside one window takes
/// exactly [`scale`]`(ns, factor)`, as a permanent slow-down; a task that
/// runs into or out of one is slowed for the part of it inside (never more
/// than wholly inside, never less than not at all).
pub(crate) fn windowed_end_ns(windows: &[(u64, u64, f64)], start_ns: u64, ns: u64) -> u64 {
    let (mut t, mut rem) = (start_ns, ns);
    let mut most = 1.0f64;
    for &(a, b, f) in windows {
        if b <= t {
            continue;
        }
        if a > t {
            let gap = a - t;
            if rem <= gap {
                break;
            }
            t = a;
            rem -= gap;
        }
        most = most.max(f);
        let need = scale(rem, f);
        if need <= b - t {
            t = t.saturating_add(need);
            rem = 0;
            break;
        }
        // The work done by the window's end at 1 / f of the speed.
        let done = (((b - t) as f64) / f).floor() as u64;
        rem -= done.min(rem);
        t = b;
    }
    let end = t.saturating_add(rem);
    end.clamp(
        start_ns.saturating_add(ns),
        start_ns
            .saturating_add(scale(ns, most))
            .max(start_ns.saturating_add(ns)),
    )
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    Waiting,
    Queued,
    Armed,
    Running,
    Done,
}

/// What happened to one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTimes {
    /// All dependencies done (+ lags), ns.
    pub ready_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The task whose end made this one start ([`NONE`] if none).
    pub binding: TaskId,
    pub state: TaskState,
}

/// Counters of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EngineStats {
    /// Events processed (ready and finish, including superseded finishes).
    pub events: u64,
    pub tasks: u64,
    /// Finish events dropped because a flow was re-rated.
    pub stale_events: u64,
    /// Most flows active on one node at once.
    pub max_shared_flows: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: u64,
    seq: u64,
    /// Task id, high bit set for a finish event.
    what: u32,
    version: u32,
}

const FINISH: u32 = 1 << 31;

#[derive(Debug, Clone)]
struct Resource {
    busy_by: TaskId,
    queue: VecDeque<TaskId>,
    last_free_ns: u64,
    last_occupant: TaskId,
}

#[derive(Debug, Clone, Copy)]
struct FlowState {
    task: TaskId,
    last_ns: u64,
    rem_fixed_ns: u64,
    /// Remaining NIC work in ns at full share, times [`SCALE`].
    rem_nic: u128,
    /// Current slowdown num / den (>= 1).
    num: u64,
    den: u64,
    version: u32,
    active: bool,
}

const SCALE: u128 = 1 << 20;

#[derive(Debug, Clone)]
struct Node {
    slots: u32,
    load: u64,
    active: Vec<u32>,
}

/// The engine: owns a [`TaskGraph`] and its run state.
#[derive(Debug, Clone)]
pub struct Engine {
    graph: TaskGraph,
    succ_lo: Vec<u32>,
    /// Dependents with the lag of their edge, grouped by dependency.
    succ: Vec<Dep>,
    pending: Vec<u32>,
    times: Vec<TaskTimes>,
    resources: Vec<Resource>,
    nodes: Vec<Node>,
    flows: Vec<FlowState>,
    /// Per gang, its armed members with the time each was armed (no
    /// per-task array: only gang members need the time).
    gang_armed: Vec<Vec<(TaskId, u64)>>,
    events: BinaryHeap<Reverse<Event>>,
    /// Events scheduled at `now` while `now` was current, in the order
    /// scheduled: after every event of `events` at `now` (those were
    /// scheduled before `now` was reached).
    now_events: VecDeque<Event>,
    /// Every event through `events` (the reference order).
    reference_queue: bool,
    seq: u64,
    now: u64,
    done: u64,
    stats: EngineStats,
}

impl Engine {
    /// Prepare a run of `graph`.
    pub fn new(mut graph: TaskGraph) -> Result<Engine, SimError> {
        // The graph grew by doubling: give its spare capacity back before
        // the run's own arrays are allocated (the peak memory of a run).
        graph.tasks.shrink_to_fit();
        graph.deps.shrink_to_fit();
        graph.flows.shrink_to_fit();
        let n = graph.tasks.len();
        let mut count = vec![0u32; n + 1];
        for d in &graph.deps {
            count[d.task as usize + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let succ_lo = count.clone();
        let mut fill = count;
        let mut succ = vec![Dep::on(0); graph.deps.len()];
        let mut pending = Vec::with_capacity(n);
        for (id, t) in graph.tasks.iter().enumerate() {
            for d in &graph.deps[t.dep_lo as usize..t.dep_hi as usize] {
                let slot = &mut fill[d.task as usize];
                succ[*slot as usize] = Dep {
                    task: id as u32,
                    lag_ns: d.lag_ns,
                };
                *slot += 1;
            }
            pending.push(t.dep_hi - t.dep_lo);
        }
        let resources = (0..graph.resources)
            .map(|_| Resource {
                busy_by: NONE,
                queue: VecDeque::new(),
                last_free_ns: 0,
                last_occupant: NONE,
            })
            .collect();
        let nodes = graph
            .node_slots
            .iter()
            .map(|s| Node {
                slots: *s,
                load: 0,
                active: Vec::new(),
            })
            .collect();
        let flows = graph
            .flows
            .iter()
            .map(|_| FlowState {
                task: NONE,
                last_ns: 0,
                rem_fixed_ns: 0,
                rem_nic: 0,
                num: 1,
                den: 1,
                version: 0,
                active: false,
            })
            .collect();
        let gang_armed = graph.gang_sizes.iter().map(|_| Vec::new()).collect();
        let mut e = Engine {
            succ_lo,
            succ,
            pending,
            times: vec![
                TaskTimes {
                    ready_ns: 0,
                    start_ns: 0,
                    end_ns: 0,
                    binding: NONE,
                    state: TaskState::Waiting,
                };
                n
            ],
            resources,
            nodes,
            flows,
            gang_armed,
            events: BinaryHeap::new(),
            now_events: VecDeque::new(),
            reference_queue: false,
            seq: 0,
            now: 0,
            done: 0,
            stats: EngineStats {
                tasks: n as u64,
                ..EngineStats::default()
            },
            graph,
        };
        for id in 0..n {
            if e.pending[id] == 0 {
                e.push(0, id as u32, 0);
            }
        }
        Ok(e)
    }

    /// The same run the plain way: every event through the priority queue
    /// (none through the FIFO of the current time) and every ready task
    /// through its resources' queues (none taking free, empty ones at
    /// once). The reference the fast paths are tested against: the same
    /// times, bindings and counters.
    pub fn with_reference_queue(mut self) -> Engine {
        self.reference_queue = true;
        let early: Vec<Event> = self.now_events.drain(..).collect();
        self.events.extend(early.into_iter().map(Reverse));
        self
    }

    fn push(&mut self, time: u64, what: u32, version: u32) {
        let ev = Event {
            time,
            seq: self.seq,
            what,
            version,
        };
        self.seq += 1;
        if time == self.now && !self.reference_queue {
            self.now_events.push_back(ev);
        } else {
            self.events.push(Reverse(ev));
        }
    }

    /// The next event in (time, sequence) order: queued events at `now`
    /// first, then those scheduled at `now`, then the next time's.
    fn pop(&mut self) -> Option<Event> {
        match self.events.peek() {
            Some(Reverse(top)) if top.time <= self.now || self.now_events.is_empty() => {
                self.events.pop().map(|Reverse(ev)| ev)
            }
            _ => self.now_events.pop_front(),
        }
    }

    /// Current simulated time, ns.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The graph being run.
    pub fn graph(&self) -> &TaskGraph {
        &self.graph
    }

    /// What happened to `task` so far.
    pub fn times(&self, task: TaskId) -> Option<&TaskTimes> {
        self.times.get(task as usize)
    }

    /// All task times, by task id.
    pub fn all_times(&self) -> &[TaskTimes] {
        &self.times
    }

    /// Counters.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// True when every task finished.
    pub fn finished(&self) -> bool {
        self.done == self.graph.tasks.len() as u64
    }

    /// Process one event; `Some(time)` of that event, `None` when no event
    /// is left.
    pub fn step(&mut self) -> Option<u64> {
        let ev = self.pop()?;
        self.now = ev.time;
        self.stats.events += 1;
        if ev.what & FINISH != 0 {
            self.finish(ev.what & !FINISH, ev.version);
        } else {
            self.ready(ev.what);
        }
        Some(ev.time)
    }

    /// Run to the end; an error names a task that never ran.
    pub fn run(&mut self) -> Result<(), SimError> {
        while self.step().is_some() {}
        if self.finished() {
            return Ok(());
        }
        let stuck = self
            .times
            .iter()
            .position(|t| t.state != TaskState::Done)
            .unwrap_or(0);
        Err(SimError::Stalled(format!(
            "{} of {} tasks never finished; first: task {stuck} ({:?})",
            self.graph.tasks.len() as u64 - self.done,
            self.graph.tasks.len(),
            self.times.get(stuck).map(|t| t.state)
        )))
    }

    fn ready(&mut self, id: TaskId) {
        let t = self.graph.tasks[id as usize];
        self.times[id as usize].state = TaskState::Queued;
        // Every resource free and nobody queued on it: the task would head
        // each queue and take them at once, so it skips the queues.
        let free = t.resources.iter().all(|&r| {
            r == NONE || {
                let res = &self.resources[r as usize];
                res.busy_by == NONE && res.queue.is_empty()
            }
        });
        if free && !self.reference_queue {
            self.take(id, false);
            return;
        }
        for r in t.resources {
            if r != NONE {
                self.resources[r as usize].queue.push_back(id);
            }
        }
        self.try_start(id);
    }

    /// Start `id` if it heads all its queues and its resources are free.
    fn try_start(&mut self, id: TaskId) -> bool {
        let t = self.graph.tasks[id as usize];
        if self.times[id as usize].state != TaskState::Queued {
            return false;
        }
        for r in t.resources {
            if r != NONE {
                let res = &self.resources[r as usize];
                if res.busy_by != NONE || res.queue.front() != Some(&id) {
                    return false;
                }
            }
        }
        self.take(id, true);
        true
    }

    /// `id` takes its resources (leaving their queues when `queued`, at
    /// whose heads it is) and starts, or arms in its gang.
    fn take(&mut self, id: TaskId, queued: bool) {
        let t = self.graph.tasks[id as usize];
        for r in t.resources {
            if r != NONE {
                let res = &mut self.resources[r as usize];
                if queued {
                    res.queue.pop_front();
                }
                res.busy_by = id;
            }
        }
        self.times[id as usize].binding = self.binding_of(id);
        if t.gang == NONE {
            self.start(id);
        } else {
            self.times[id as usize].state = TaskState::Armed;
            let g = t.gang as usize;
            self.gang_armed[g].push((id, self.now));
            if self.gang_armed[g].len() as u32 >= self.graph.gang_sizes[g] {
                let members = std::mem::take(&mut self.gang_armed[g]);
                let straggler_binding = self.times[id as usize].binding;
                for (m, armed_ns) in members {
                    if armed_ns < self.now {
                        self.times[m as usize].binding = straggler_binding;
                    }
                    self.start(m);
                }
            }
        }
    }

    fn binding_of(&self, id: TaskId) -> TaskId {
        let t = self.graph.tasks[id as usize];
        let mut best = NONE;
        let mut best_t = 0u64;
        for d in &self.graph.deps[t.dep_lo as usize..t.dep_hi as usize] {
            let e = self.times[d.task as usize].end_ns.saturating_add(d.lag_ns);
            if best == NONE || e > best_t {
                best = d.task;
                best_t = e;
            }
        }
        for r in t.resources {
            if r != NONE {
                let res = &self.resources[r as usize];
                if res.last_occupant != NONE && (best == NONE || res.last_free_ns > best_t) {
                    best = res.last_occupant;
                    best_t = res.last_free_ns;
                }
            }
        }
        best
    }

    fn start(&mut self, id: TaskId) {
        let now = self.now;
        let t = self.graph.tasks[id as usize];
        let tt = &mut self.times[id as usize];
        tt.state = TaskState::Running;
        tt.start_ns = now;
        if t.flow == NONE {
            let end = match self.graph.task_windows.get(id as usize) {
                Some(&w) if w != NONE => {
                    windowed_end_ns(&self.graph.windows[w as usize], now, t.duration_ns)
                }
                _ => now.saturating_add(t.duration_ns),
            };
            self.push(end, id | FINISH, 0);
            return;
        }
        let f = self.graph.flows[t.flow as usize];
        let fs = &mut self.flows[t.flow as usize];
        fs.task = id;
        fs.last_ns = now;
        fs.rem_fixed_ns = t.duration_ns - f.nic_ns;
        fs.rem_nic = u128::from(f.nic_ns) * SCALE;
        fs.num = 1;
        fs.den = 1;
        fs.active = true;
        if f.nic_ns == 0 {
            self.push(now.saturating_add(t.duration_ns), id | FINISH, 0);
            return;
        }
        self.advance_nodes(&f);
        for (n, w) in f.nodes {
            if n != NONE {
                let node = &mut self.nodes[n as usize];
                node.load += u64::from(w.max(1));
                node.active.push(t.flow);
                self.stats.max_shared_flows =
                    self.stats.max_shared_flows.max(node.active.len() as u32);
            }
        }
        self.rerate_nodes(&f);
    }

    /// Bring every active flow on `f`'s nodes up to now at its old rate.
    fn advance_nodes(&mut self, f: &FlowDef) {
        let now = self.now;
        for (n, _) in f.nodes {
            if n == NONE {
                continue;
            }
            for i in 0..self.nodes[n as usize].active.len() {
                let fi = self.nodes[n as usize].active[i] as usize;
                let fs = &mut self.flows[fi];
                let mut dt = now - fs.last_ns;
                let d1 = dt.min(fs.rem_fixed_ns);
                fs.rem_fixed_ns -= d1;
                dt -= d1;
                let done = u128::from(dt) * SCALE * u128::from(fs.den) / u128::from(fs.num);
                fs.rem_nic = fs.rem_nic.saturating_sub(done);
                fs.last_ns = now;
            }
        }
    }

    /// New rates and finish events for every active flow on `f`'s nodes.
    fn rerate_nodes(&mut self, f: &FlowDef) {
        let now = self.now;
        for (n, _) in f.nodes {
            if n == NONE {
                continue;
            }
            for i in 0..self.nodes[n as usize].active.len() {
                let fi = self.nodes[n as usize].active[i] as usize;
                let task = self.flows[fi].task;
                let def = self.graph.flows[fi];
                // Worst node: largest load / slots, at least 1.
                let (mut num, mut den) = (1u64, 1u64);
                for (m, _) in def.nodes {
                    if m == NONE {
                        continue;
                    }
                    let node = &self.nodes[m as usize];
                    let (a, b) = (node.load.max(u64::from(node.slots)), u64::from(node.slots));
                    if u128::from(a) * u128::from(den) > u128::from(num) * u128::from(b) {
                        num = a;
                        den = b;
                    }
                }
                let fs = &mut self.flows[fi];
                if fs.num == num && fs.den == den && fs.version > 0 {
                    continue;
                }
                fs.num = num;
                fs.den = den;
                fs.version += 1;
                let nic = (fs.rem_nic * u128::from(num)).div_ceil(u128::from(den) * SCALE);
                let end = now
                    .saturating_add(fs.rem_fixed_ns)
                    .saturating_add(u64::try_from(nic).unwrap_or(u64::MAX));
                let version = fs.version;
                self.push(end, task | FINISH, version);
            }
        }
    }

    fn finish(&mut self, id: TaskId, version: u32) {
        let t = self.graph.tasks[id as usize];
        if t.flow != NONE {
            let fs = self.flows[t.flow as usize];
            if fs.version != version {
                self.stats.stale_events += 1;
                return;
            }
            if fs.active {
                let f = self.graph.flows[t.flow as usize];
                self.flows[t.flow as usize].active = false;
                if f.nic_ns > 0 {
                    self.advance_nodes(&f);
                    for (n, w) in f.nodes {
                        if n != NONE {
                            let node = &mut self.nodes[n as usize];
                            node.load = node.load.saturating_sub(u64::from(w.max(1)));
                            node.active.retain(|x| *x != t.flow);
                        }
                    }
                    self.rerate_nodes(&f);
                }
            }
        }
        if self.times[id as usize].state != TaskState::Running {
            return;
        }
        let now = self.now;
        let tt = &mut self.times[id as usize];
        tt.end_ns = now;
        tt.state = TaskState::Done;
        self.done += 1;
        for r in t.resources {
            if r != NONE {
                let res = &mut self.resources[r as usize];
                res.busy_by = NONE;
                res.last_free_ns = now;
                res.last_occupant = id;
            }
        }
        let (lo, hi) = (self.succ_lo[id as usize], self.succ_lo[id as usize + 1]);
        for i in lo..hi {
            let Dep {
                task: s,
                lag_ns: lag,
            } = self.succ[i as usize];
            let ready = &mut self.times[s as usize].ready_ns;
            *ready = (*ready).max(now.saturating_add(lag));
            let p = &mut self.pending[s as usize];
            *p -= 1;
            if *p == 0 {
                let at = self.times[s as usize].ready_ns;
                self.push(at, s, 0);
            }
        }
        for r in t.resources {
            if r != NONE {
                if let Some(&head) = self.resources[r as usize].queue.front() {
                    self.try_start(head);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windowed_work_is_slowed_for_its_part_inside() {
        let w = [(100u64, 200u64, 2.0f64)];
        // Wholly before, after, inside.
        assert_eq!(windowed_end_ns(&w, 0, 50), 50);
        assert_eq!(windowed_end_ns(&w, 200, 50), 250);
        assert_eq!(windowed_end_ns(&w, 100, 30), 160);
        // Into the window: 50 at full speed, then 10 of work takes 20.
        assert_eq!(windowed_end_ns(&w, 50, 60), 120);
        // Across it: 100 full, the window does 50 of work, 50 more after.
        assert_eq!(windowed_end_ns(&w, 0, 200), 250);
        // A window over everything is the permanent slow-down.
        let all = [(0u64, u64::MAX, 1.37f64)];
        for ns in [1u64, 7, 1_000, 123_457] {
            assert_eq!(windowed_end_ns(&all, 5, ns), 5 + scale(ns, 1.37));
        }
    }

    #[test]
    fn chain_and_fifo_on_one_resource() {
        let mut g = TaskGraph::new();
        let r = g.add_resource();
        let a = g.add_task(TaskDef::on(r, 10), &[]).unwrap();
        let b = g.add_task(TaskDef::on(r, 5), &[]).unwrap();
        let c = g
            .add_task(
                TaskDef::on(r, 1),
                &[Dep {
                    task: a,
                    lag_ns: 100,
                }],
            )
            .unwrap();
        let mut e = Engine::new(g).unwrap();
        e.run().unwrap();
        let t = |x| *e.times(x).unwrap();
        assert_eq!((t(a).start_ns, t(a).end_ns), (0, 10));
        assert_eq!((t(b).start_ns, t(b).end_ns), (10, 15));
        assert_eq!((t(c).start_ns, t(c).end_ns), (110, 111));
        assert_eq!(t(b).binding, a);
        assert_eq!(t(c).binding, a);
    }

    #[test]
    fn two_resource_task_waits_for_both() {
        let mut g = TaskGraph::new();
        let (r1, r2) = (g.add_resource(), g.add_resource());
        let a = g.add_task(TaskDef::on(r2, 50), &[]).unwrap();
        let x = g
            .add_task(
                TaskDef {
                    resources: [r1, r2],
                    duration_ns: 7,
                    flow: None,
                    gang: None,
                },
                &[],
            )
            .unwrap();
        let mut e = Engine::new(g).unwrap();
        e.run().unwrap();
        assert_eq!(e.times(x).unwrap().start_ns, 50);
        assert_eq!(e.times(x).unwrap().binding, a);
    }

    #[test]
    fn gang_starts_together() {
        let mut g = TaskGraph::new();
        let (r1, r2) = (g.add_resource(), g.add_resource());
        let gang = g.add_gang();
        let slow = g.add_task(TaskDef::on(r2, 30), &[]).unwrap();
        let m1 = g
            .add_task(
                TaskDef {
                    gang: Some(gang),
                    ..TaskDef::on(r1, 4)
                },
                &[],
            )
            .unwrap();
        let m2 = g
            .add_task(
                TaskDef {
                    gang: Some(gang),
                    ..TaskDef::on(r2, 4)
                },
                &[Dep::on(slow)],
            )
            .unwrap();
        let mut e = Engine::new(g).unwrap();
        e.run().unwrap();
        assert_eq!(e.times(m1).unwrap().start_ns, 30);
        assert_eq!(e.times(m2).unwrap().start_ns, 30);
        assert_eq!(e.times(m1).unwrap().binding, slow);
    }

    #[test]
    fn shared_nic_flows_slow_each_other() {
        let mut g = TaskGraph::new();
        let (r1, r2) = (g.add_resource(), g.add_resource());
        let node = g.add_node(1);
        let flow = FlowDef {
            nic_ns: 100,
            nodes: [(node, 1), (NONE, 0)],
        };
        let a = g
            .add_task(
                TaskDef {
                    flow: Some(flow),
                    ..TaskDef::on(r1, 100)
                },
                &[],
            )
            .unwrap();
        let b = g
            .add_task(
                TaskDef {
                    flow: Some(flow),
                    ..TaskDef::on(r2, 100)
                },
                &[],
            )
            .unwrap();
        let mut e = Engine::new(g).unwrap();
        e.run().unwrap();
        // Both share the node from 0: each at half rate.
        assert_eq!(e.times(a).unwrap().end_ns, 200);
        assert_eq!(e.times(b).unwrap().end_ns, 200);
    }

    #[test]
    fn staggered_flows_rerate() {
        let mut g = TaskGraph::new();
        let (r1, r2, r3) = (g.add_resource(), g.add_resource(), g.add_resource());
        let node = g.add_node(1);
        let flow = |ns| FlowDef {
            nic_ns: ns,
            nodes: [(node, 1), (NONE, 0)],
        };
        let gate = g.add_task(TaskDef::on(r3, 50), &[]).unwrap();
        let a = g
            .add_task(
                TaskDef {
                    flow: Some(flow(100)),
                    ..TaskDef::on(r1, 100)
                },
                &[],
            )
            .unwrap();
        let b = g
            .add_task(
                TaskDef {
                    flow: Some(flow(100)),
                    ..TaskDef::on(r2, 100)
                },
                &[Dep::on(gate)],
            )
            .unwrap();
        let mut e = Engine::new(g).unwrap();
        e.run().unwrap();
        // a: 50 alone, then 50 left at half rate -> ends 150; b: 50 done by
        // 150 at half rate, 50 left alone -> 200.
        assert_eq!(e.times(a).unwrap().end_ns, 150);
        assert_eq!(e.times(b).unwrap().end_ns, 200);
    }

    #[test]
    fn rejects_forward_dependencies() {
        let mut g = TaskGraph::new();
        let r = g.add_resource();
        assert!(g.add_task(TaskDef::on(r, 1), &[Dep::on(0)]).is_err());
        assert!(g.add_task(TaskDef::on(7, 1), &[]).is_err());
    }
}
