//! The console's state and the one place it changes: [`App::update`] takes an
//! [`Action`] (a key's meaning, an event from the core, a fresh snapshot) and
//! returns what the driver must do ([`Effect`]). No IO here; rendering reads
//! `&App` only (`ui.rs`).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use robobrain_core::link::NavFeedback;
use robobrain_core::protocol::describe;
use robobrain_core::protocol::{
    ApprovalStatus, ApprovalView, BrainKind, Command, DecisionType, Door, Event, EventKind, Op,
    Role, SkillStatus, SkillView, Snapshot, SpeechTrack, TaskStatus, Verdict,
};
use robobrain_core::skills::SkillRegistry;
use robobrain_core::world::World;
use serde_json::Value;

use super::forecast::{Forecast, NoForecast, forecast};
use super::line::{Edit, LineEditor};
use super::slash::{self, Input};

/// Lines kept per feed (timeline, log, speech, …); older ones scroll away.
pub const FEED_CAP: usize = 1000;
/// Sim seconds of battery history kept for the trend.
const TREND_WINDOW_S: f64 = 60.0;
/// Characters of streamed model text kept.
const TOKEN_CAP: usize = 8000;
/// Wall time after an approval card appears, is focused or shows another
/// approval during which the keys that answer it are not taken: a key
/// pressed as the card changes was meant for what was there before.
pub const ANSWER_GUARD: Duration = Duration::from_secs(1);

/// What a key, an event or a timer means to the console.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// An event from the core.
    Core(Box<Event>),
    /// The core's current state.
    Snapshot(Box<Snapshot>),
    /// Change the line being edited (input, JSON field or reject reason).
    Edit(Edit),
    /// Start typing in the input line (from a panel), with this text.
    Type(String),
    /// Enter: send the input line, or submit the open editor.
    Submit,
    /// Recall the previous line sent.
    HistoryPrev,
    /// Recall the next line sent.
    HistoryNext,
    /// Move focus to the next panel.
    FocusNext,
    /// Move focus to the previous panel.
    FocusPrev,
    /// Scroll the focused panel by this many lines (positive: older).
    Scroll(i32),
    /// Scroll the focused panel to its oldest line.
    ScrollOldest,
    /// Scroll the focused panel back to its newest line.
    ScrollNewest,
    /// Show or hide the key bindings.
    Help,
    /// Close whatever is open (help, an editor, the prompt, a question).
    Escape,
    /// Emergency stop, from anywhere.
    EStop,
    /// Leave, asking first if work is under way.
    Quit,
    /// Yes, leave.
    ConfirmQuit,
    /// Give the keyboard to the approval card (the only way to answer it by key).
    FocusCard,
    /// Approve the selected approval as proposed (the card must have focus).
    Approve,
    /// Open the selected approval's arguments for editing.
    EditArgs,
    /// Start rejecting the selected approval (asks for a reason).
    Reject,
    /// Select the next pending approval.
    NextApproval,
    /// Select the previous pending approval.
    PrevApproval,
    /// Hide the approval card, or show it again.
    ToggleApprovals,
    /// A key that does not answer the focused card (Enter): say which do.
    CardKeys,
}

/// What the driver must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send this command to the core.
    Send(Command),
    /// Leave the console.
    Quit,
}

/// The panels that take focus, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Focus {
    /// The input line.
    Input,
    /// The ReAct timeline.
    Timeline,
    /// The task queue.
    Tasks,
    /// Speech lines.
    Speech,
    /// Streamed model tokens.
    Tokens,
    /// Memory retrievals.
    Memory,
    /// The event log.
    Log,
}

impl Focus {
    /// Every focusable panel, in Tab order.
    pub const ALL: [Focus; 7] = [
        Focus::Input,
        Focus::Timeline,
        Focus::Tasks,
        Focus::Speech,
        Focus::Tokens,
        Focus::Memory,
        Focus::Log,
    ];

    fn index(self) -> usize {
        Self::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }

    fn step(self, by: isize) -> Self {
        let n = Self::ALL.len() as isize;
        Self::ALL[(self.index() as isize + by).rem_euclid(n) as usize]
    }
}

/// What is drawn over the panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    /// Nothing.
    None,
    /// The key bindings.
    Help,
    /// "Quit while a task runs?"
    QuitConfirm,
}

/// Where the approval prompt is.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Showing what will happen; waiting for approve / edit / reject.
    View,
    /// Editing the arguments as JSON; `error` is why the last try was refused.
    Edit {
        /// The JSON field.
        editor: LineEditor,
        /// Why the last edit was refused (locally or by the kernel's guardrails).
        error: Option<String>,
        /// Sent; waiting for the kernel's verdict.
        sent: bool,
    },
    /// Typing the reason for a rejection.
    Reject {
        /// The reason field.
        editor: LineEditor,
    },
    /// Approved or rejected; waiting for the kernel to confirm.
    Sent(&'static str),
}

/// The approval prompt's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// Index into the snapshot's pending approvals.
    pub selected: usize,
    /// The approval the stage belongs to.
    pub approval_id: Option<String>,
    /// What the prompt is doing.
    pub stage: Stage,
    /// Hidden by Ctrl-A until a new approval arrives, Ctrl-A or F2.
    pub hidden: bool,
    /// The card has the keyboard (F2). Only then do keys answer it; a new
    /// approval never gives it focus, so typing always goes to the input line.
    pub focused: bool,
    /// Keys that answer the card are not taken before this wall time
    /// ([`ANSWER_GUARD`] after the card appeared, was focused or changed).
    pub guard_until: Instant,
}

/// One line of the ReAct timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// An utterance was understood.
    Heard {
        /// What was said.
        utterance: String,
        /// What it was taken to mean.
        intent: String,
        /// Handled by the local parser (no model).
        local: bool,
    },
    /// How an utterance went through the language pipeline.
    Understood {
        /// Who took it (`None`: nobody understood it).
        by: Option<String>,
        /// The intent it was read as.
        intent: String,
        /// Each understander asked before, with why it passed.
        passed: Vec<String>,
    },
    /// The brain decided.
    Decided {
        /// Task.
        task_id: String,
        /// Iteration within the task.
        iteration: u32,
        /// Decision type.
        decision: DecisionType,
        /// Why.
        reason: String,
        /// Which brain.
        brain: BrainKind,
    },
    /// The guardrails judged an op.
    Judged {
        /// The op, in words.
        op: String,
        /// The verdict.
        verdict: Verdict,
        /// Why.
        reason: String,
    },
    /// An approval changed.
    Approval {
        /// Approval id.
        id: String,
        /// New status.
        status: ApprovalStatus,
        /// Why.
        reason: String,
    },
}

/// How loud a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Routine.
    Info,
    /// Worth a look.
    Warn,
    /// Something failed.
    Error,
}

/// A line with the sim time it happened at.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed<T> {
    /// Sim seconds.
    pub time: f64,
    /// The line.
    pub item: T,
}

/// The latest navigation progress, kept after the goal ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Nav {
    /// Skill name.
    pub skill: String,
    /// Where to (zone or args).
    pub target: String,
    /// Progress.
    pub feedback: NavFeedback,
    /// Last status.
    pub status: SkillStatus,
}

/// The whole console state.
pub struct App {
    pub(crate) world: World,
    registry: Option<SkillRegistry>,
    /// The skills the run announced in its `hello` (MCP's and the home's
    /// included): edited arguments are checked against their schemas.
    skills: Vec<SkillView>,
    pub(crate) snap: Snapshot,
    pub(crate) color: bool,
    pub(crate) mode_why: Option<Timed<String>>,
    pub(crate) activity_why: Option<Timed<String>>,
    pub(crate) timeline: VecDeque<Timed<Step>>,
    pub(crate) speech: VecDeque<Timed<(SpeechTrack, String)>>,
    pub(crate) tokens: String,
    pub(crate) devices: Vec<(String, String)>,
    pub(crate) memory: VecDeque<Timed<String>>,
    pub(crate) log: VecDeque<Timed<(Level, String)>>,
    pub(crate) battery: VecDeque<(f64, f64)>,
    pub(crate) nav: Option<Nav>,
    pub(crate) input: LineEditor,
    pub(crate) notice: Option<(Level, String)>,
    history: Vec<String>,
    history_pos: Option<usize>,
    pub(crate) focus: Focus,
    scroll: HashMap<Focus, usize>,
    pub(crate) overlay: Overlay,
    pub(crate) prompt: Prompt,
    pub(crate) forecasts: HashMap<String, Result<Forecast, NoForecast>>,
    seen_approvals: Vec<String>,
    pub(crate) estop_sent: bool,
    /// Attached to a run served elsewhere: its URL and this console's role.
    pub(crate) remote: Option<(String, Role)>,
    /// Wall time now, as the driver last set it ([`App::set_clock`]).
    now: Instant,
}

impl App {
    /// The skills the run announced (its `hello`): edited arguments of an
    /// MCP or home call are checked against their schemas too.
    #[must_use]
    pub fn with_skills(mut self, skills: Vec<SkillView>) -> Self {
        self.set_skills(skills);
        self
    }

    /// Replaces the skills edits are checked against ([`App::with_skills`]).
    pub fn set_skills(&mut self, skills: Vec<SkillView>) {
        self.skills = skills;
    }

    /// A console for `world`, painting `snapshot` first. `color` is false
    /// under `NO_COLOR`. Edited arguments are checked before they are sent
    /// (the kernel checks them again): against the skills the run
    /// announces ([`App::with_skills`]), and a built-in skill's against the
    /// world too (a zone that exists).
    pub fn new(world: World, snapshot: Snapshot, color: bool) -> Self {
        let now = Instant::now();
        let mut app = Self {
            world,
            registry: SkillRegistry::with_builtins().ok(),
            skills: Vec::new(),
            snap: Snapshot::default(),
            color,
            mode_why: None,
            activity_why: None,
            timeline: VecDeque::new(),
            speech: VecDeque::new(),
            tokens: String::new(),
            devices: Vec::new(),
            memory: VecDeque::new(),
            log: VecDeque::new(),
            battery: VecDeque::new(),
            nav: None,
            input: LineEditor::default(),
            notice: None,
            history: Vec::new(),
            history_pos: None,
            focus: Focus::Input,
            scroll: HashMap::new(),
            overlay: Overlay::None,
            prompt: Prompt {
                selected: 0,
                approval_id: None,
                stage: Stage::View,
                hidden: false,
                focused: false,
                guard_until: now,
            },
            forecasts: HashMap::new(),
            seen_approvals: Vec::new(),
            estop_sent: false,
            remote: None,
            now,
        };
        app.set_snapshot(snapshot);
        app
    }

    /// Marks the console as attached to the run served at `url`, as `role`
    /// (a viewer's commands are refused by the server; the header says so).
    pub fn attached(&mut self, url: &str, role: Role) {
        self.remote = Some((url.to_string(), role));
    }

    /// Sets the wall time the answer guard is measured against; the driver
    /// calls it before every update (tests move it by hand).
    pub fn set_clock(&mut self, now: Instant) {
        self.now = now;
    }

    /// The state the panels paint.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// Lines a feed panel is scrolled back from its newest.
    pub fn scroll_of(&self, focus: Focus) -> usize {
        self.scroll.get(&focus).copied().unwrap_or(0)
    }

    /// Whether work is under way that quitting would abandon.
    pub fn is_busy(&self) -> bool {
        !self.snap.approvals.is_empty()
            || !self.snap.running.is_empty()
            || self.snap.tasks.iter().any(|t| !t.status.is_terminal())
    }

    /// Whether the approval prompt is on screen.
    pub fn prompt_open(&self) -> bool {
        !self.snap.approvals.is_empty() && !self.prompt.hidden && self.overlay == Overlay::None
    }

    /// The approval the prompt shows.
    pub fn selected_approval(&self) -> Option<&ApprovalView> {
        self.snap.approvals.get(
            self.prompt
                .selected
                .min(self.snap.approvals.len().saturating_sub(1)),
        )
    }

    /// Whether the approval card is on screen and has the keyboard.
    pub fn card_focused(&self) -> bool {
        self.prompt_open() && self.prompt.focused
    }

    /// Whether keys go to a text field (the input line or a prompt editor).
    pub fn is_typing(&self) -> bool {
        if self.card_focused() {
            matches!(self.prompt.stage, Stage::Edit { .. } | Stage::Reject { .. })
        } else {
            self.overlay == Overlay::None && self.focus == Focus::Input
        }
    }

    /// Applies one action.
    pub fn update(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Submit => self.submit(),
            Action::EStop => Some(self.estop()),
            Action::Quit => self.quit(),
            Action::ConfirmQuit => Some(Effect::Quit),
            Action::Approve => self.approve(),
            other => {
                self.apply_action(other);
                None
            }
        }
    }

    /// Applies an action that only changes the console's state: nothing to
    /// send, nothing for the driver to do.
    fn apply_action(&mut self, action: Action) {
        match action {
            Action::Core(event) => self.apply_event(*event),
            Action::Snapshot(snap) => self.set_snapshot(*snap),
            Action::Edit(edit) => {
                if let Some(editor) = self.editor_mut() {
                    editor.apply(edit);
                }
            }
            Action::Type(text) => {
                self.focus = Focus::Input;
                self.prompt.focused = false;
                self.input.apply(Edit::Insert(text));
            }
            Action::HistoryPrev | Action::HistoryNext => {
                self.recall(action == Action::HistoryPrev);
            }
            Action::FocusNext | Action::FocusPrev => {
                self.focus = self
                    .focus
                    .step(if action == Action::FocusNext { 1 } else { -1 });
            }
            Action::Scroll(by) => {
                let s = self.scroll.entry(self.focus).or_default();
                *s = s.saturating_add_signed(by as isize);
            }
            Action::ScrollOldest => {
                self.scroll.insert(self.focus, usize::MAX / 2);
            }
            Action::ScrollNewest => {
                self.scroll.insert(self.focus, 0);
            }
            Action::Help => self.toggle_help(),
            Action::Escape => self.escape(),
            Action::FocusCard => self.focus_card(),
            Action::Reject => {
                if self.may_answer() {
                    self.notice = None;
                    self.stage(Stage::Reject {
                        editor: LineEditor::default(),
                    });
                }
            }
            Action::EditArgs => {
                if self.may_answer() {
                    self.open_editor();
                }
            }
            Action::NextApproval | Action::PrevApproval => {
                self.select_approval(action == Action::NextApproval);
            }
            Action::ToggleApprovals => self.toggle_approvals(),
            Action::CardKeys => {
                self.notice = Some((
                    Level::Info,
                    "Enter does not answer a card: F3 approves · F4 edits · F8 rejects · Esc back to typing"
                        .into(),
                ));
            }
            // They may give the driver something to do: `update` applies them.
            Action::Submit
            | Action::EStop
            | Action::Quit
            | Action::ConfirmQuit
            | Action::Approve => {}
        }
    }

    /// Emergency stop: notes it was sent and says how to come back from it.
    fn estop(&mut self) -> Effect {
        self.estop_sent = true;
        self.notice = Some((
            Level::Warn,
            "E-STOP sent; /reset resets it, then /resume starts".into(),
        ));
        Effect::Send(Command::EStop)
    }

    /// Leaves, or first asks whether to while work is under way.
    fn quit(&mut self) -> Option<Effect> {
        if self.is_busy() && self.overlay != Overlay::QuitConfirm {
            self.overlay = Overlay::QuitConfirm;
            None
        } else {
            Some(Effect::Quit)
        }
    }

    /// Shows the key bindings, or hides them if shown.
    fn toggle_help(&mut self) {
        self.overlay = if self.overlay == Overlay::Help {
            Overlay::None
        } else {
            Overlay::Help
        };
    }

    /// Gives the keyboard to the approval card (F2), if one is waiting.
    fn focus_card(&mut self) {
        if self.snap.approvals.is_empty() {
            self.notice = Some((Level::Info, "no approval is waiting".into()));
        } else {
            self.overlay = Overlay::None;
            self.prompt.hidden = false;
            self.prompt.focused = true;
            self.guard();
            self.notice = Some((
                Level::Info,
                "the card has the keys: F3 approve · F4 edit · F8 reject · Esc back to typing"
                    .into(),
            ));
        }
    }

    /// Approves the selected approval as proposed, if the card may be answered.
    fn approve(&mut self) -> Option<Effect> {
        if !self.may_answer() {
            return None;
        }
        let id = self.selected_approval()?.approval_id.clone();
        self.stage(Stage::Sent("approved"));
        self.prompt.focused = false;
        Some(Effect::Send(Command::Approve { approval_id: id }))
    }

    /// Selects the next (`forward`) or previous pending approval, back at its
    /// proposal, and restarts the answer guard.
    fn select_approval(&mut self, forward: bool) {
        let n = self.snap.approvals.len().max(1);
        let by = if forward { 1 } else { n - 1 };
        self.prompt.selected = (self.prompt.selected + by) % n;
        self.prompt.stage = Stage::View;
        self.prompt.approval_id = self.selected_approval().map(|a| a.approval_id.clone());
        self.guard();
    }

    /// Hides the approval card, or shows it again, if one is waiting.
    fn toggle_approvals(&mut self) {
        if self.snap.approvals.is_empty() {
            self.notice = Some((Level::Info, "no approval is waiting".into()));
        } else {
            self.prompt.hidden = !self.prompt.hidden;
            self.prompt.focused = false;
        }
    }

    /// Starts the answer guard: keys that answer the card wait [`ANSWER_GUARD`].
    fn guard(&mut self) {
        self.prompt.guard_until = self.now + ANSWER_GUARD;
    }

    /// Whether a key may answer the card now: it has focus, shows its
    /// proposal (not an answer already sent), and the guard has passed.
    fn may_answer(&mut self) -> bool {
        if !self.card_focused() || self.prompt.stage != Stage::View {
            return false;
        }
        if self.now < self.prompt.guard_until {
            self.notice = Some((
                Level::Warn,
                "the card just changed: read it, then answer (keys are ignored for a second)"
                    .into(),
            ));
            return false;
        }
        true
    }

    /// Opens the selected approval's arguments in the JSON editor.
    fn open_editor(&mut self) {
        if let Some(Op::Dispatch { args, .. }) = self.selected_approval().map(|a| &a.op) {
            let editor = LineEditor::with_text(&args.to_string());
            self.notice = None;
            self.stage(Stage::Edit {
                editor,
                error: None,
                sent: false,
            });
        }
    }

    fn editor_mut(&mut self) -> Option<&mut LineEditor> {
        if self.card_focused() {
            match &mut self.prompt.stage {
                Stage::Edit { editor, sent, .. } => {
                    *sent = false;
                    Some(editor)
                }
                Stage::Reject { editor } => Some(editor),
                Stage::View | Stage::Sent(_) => None,
            }
        } else {
            self.history_pos = None;
            Some(&mut self.input)
        }
    }

    fn stage(&mut self, stage: Stage) {
        self.prompt.approval_id = self.selected_approval().map(|a| a.approval_id.clone());
        self.prompt.stage = stage;
    }

    fn escape(&mut self) {
        if self.overlay != Overlay::None {
            self.overlay = Overlay::None;
        } else if self.card_focused() {
            if matches!(self.prompt.stage, Stage::View | Stage::Sent(_)) {
                self.prompt.focused = false;
                self.focus = Focus::Input;
                self.notice = Some((
                    Level::Info,
                    "back to typing; F2 answers the card, Ctrl-A hides it".into(),
                ));
            } else {
                self.prompt.stage = Stage::View;
            }
        } else if self.focus == Focus::Input {
            self.notice = None;
            self.focus = Focus::Timeline;
        } else {
            self.focus = Focus::Input;
        }
    }

    fn submit(&mut self) -> Option<Effect> {
        if self.card_focused() {
            // Enter sends an editor's text, never the card's proposal.
            return match self.prompt.stage.clone() {
                Stage::View | Stage::Sent(_) => None,
                Stage::Reject { editor } => {
                    let reason = editor.text().trim().to_string();
                    let id = self.selected_approval()?.approval_id.clone();
                    self.prompt.stage = Stage::Sent("rejected");
                    self.prompt.focused = false;
                    Some(Effect::Send(Command::Reject {
                        approval_id: id,
                        reason,
                    }))
                }
                Stage::Edit { editor, .. } => self.submit_edit(editor.text()),
            };
        }
        if self.focus != Focus::Input {
            self.focus = Focus::Input;
            return None;
        }
        let line = self.input.text().to_string();
        match slash::parse(&line) {
            Ok(input) => {
                self.input.take();
                if !line.trim().is_empty() {
                    self.history.push(line.trim().to_string());
                }
                self.history_pos = None;
                self.notice = None;
                match input {
                    // An id that is not waiting leaves the line to fix.
                    Input::Answer(cmd) => {
                        let effect = self.answer_by_command(cmd);
                        if effect.is_none() {
                            self.input = LineEditor::with_text(&line);
                        }
                        effect
                    }
                    Input::EditArgs { approval_id } => {
                        if !self.edit_by_command(&approval_id) {
                            self.input = LineEditor::with_text(&line);
                        }
                        None
                    }
                    Input::Send(cmd) => {
                        if cmd == Command::EStop {
                            return self.update(Action::EStop);
                        }
                        if cmd == Command::ResetEStop {
                            self.estop_sent = false;
                        }
                        Some(Effect::Send(cmd))
                    }
                    Input::Help => self.update(Action::Help),
                    Input::Quit => self.update(Action::Quit),
                    Input::Nothing => None,
                }
            }
            Err(e) => {
                // The line stays so it can be fixed.
                self.notice = Some((Level::Error, e.to_string()));
                None
            }
        }
    }

    fn submit_edit(&mut self, text: &str) -> Option<Effect> {
        let approval = self.selected_approval()?.clone();
        let checked = self.check_edit(&approval, text);
        if let Stage::Edit { error, sent, .. } = &mut self.prompt.stage {
            *sent = checked.is_ok();
            *error = checked.as_ref().err().cloned();
        }
        let args = checked.ok()?;
        Some(Effect::Send(Command::Edit {
            approval_id: approval.approval_id,
            args,
        }))
    }

    /// Edited arguments as JSON, checked against the skill's schema (the
    /// kernel's guardrails check them again); why not, in words.
    fn check_edit(&self, approval: &ApprovalView, text: &str) -> Result<Value, String> {
        let args: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        if let Op::Dispatch { skill, .. } = &approval.op
            && let Some(view) = self.skills.iter().find(|s| &s.name == skill)
        {
            robobrain_core::skills::check_announced(view, &args).map_err(|e| e.to_string())?;
        }
        if let (Op::Dispatch { skill, .. }, Some(registry)) = (&approval.op, &self.registry)
            && registry.spec(skill).is_some()
        {
            registry
                .check(skill, &args, &self.world)
                .map_err(|e| e.to_string())?;
        }
        Ok(args)
    }

    /// Where `/approve ID`, `/reject ID …` or `/edit ID JSON` goes: sent when
    /// `ID` is waiting (and edited arguments pass the schema), else refused
    /// on the hint line.
    fn answer_by_command(&mut self, cmd: Command) -> Option<Effect> {
        let id = match &cmd {
            Command::Approve { approval_id }
            | Command::Reject { approval_id, .. }
            | Command::Edit { approval_id, .. } => approval_id.clone(),
            _ => return Some(Effect::Send(cmd)),
        };
        let approval = self.waiting(&id).cloned()?;
        if let Command::Edit { args, .. } = &cmd
            && let Err(why) = self.check_edit(&approval, &args.to_string())
        {
            self.notice = Some((Level::Error, format!("edit of {id} refused: {why}")));
            return None;
        }
        let shown = self
            .selected_approval()
            .is_some_and(|a| a.approval_id == id);
        match &cmd {
            Command::Approve { .. } if shown => self.stage(Stage::Sent("approved")),
            Command::Reject { .. } if shown => self.stage(Stage::Sent("rejected")),
            _ => {}
        }
        if shown {
            self.prompt.focused = false;
        }
        Some(Effect::Send(cmd))
    }

    /// `/edit ID`: the card of `ID`, focused, with its arguments in the
    /// editor; false when `ID` is not waiting.
    fn edit_by_command(&mut self, id: &str) -> bool {
        if self.waiting(id).is_none() {
            return false;
        }
        if let Some(i) = self.snap.approvals.iter().position(|a| a.approval_id == id) {
            self.prompt.selected = i;
        }
        self.overlay = Overlay::None;
        self.prompt.hidden = false;
        self.prompt.focused = true;
        self.open_editor();
        true
    }

    /// The pending approval `id`; when there is none, says so on the hint line.
    fn waiting(&mut self, id: &str) -> Option<&ApprovalView> {
        if !self.snap.approvals.iter().any(|a| a.approval_id == id) {
            let ids: Vec<&str> = self
                .snap
                .approvals
                .iter()
                .map(|a| a.approval_id.as_str())
                .collect();
            let waiting = if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            };
            self.notice = Some((
                Level::Error,
                format!("no approval {id} is waiting; waiting: {waiting}"),
            ));
            return None;
        }
        self.snap.approvals.iter().find(|a| a.approval_id == id)
    }

    fn recall(&mut self, older: bool) {
        if self.history.is_empty() {
            return;
        }
        let last = self.history.len() - 1;
        let pos = match (self.history_pos, older) {
            (None, true) => Some(last),
            (Some(p), true) => Some(p.saturating_sub(1)),
            (Some(p), false) if p < last => Some(p + 1),
            (None | Some(_), false) => None,
        };
        self.history_pos = pos;
        self.input = pos.map_or_else(LineEditor::default, |p| {
            LineEditor::with_text(&self.history[p])
        });
    }

    fn set_snapshot(&mut self, snap: Snapshot) {
        if self.battery.back().is_none_or(|(t, _)| snap.time > *t) {
            self.battery.push_back((snap.time, snap.robot.battery_pct));
            while self
                .battery
                .front()
                .is_some_and(|(t, _)| snap.time - t > TREND_WINDOW_S)
            {
                self.battery.pop_front();
            }
        }
        if let Some(feedback) = snap.running.iter().find_map(|r| {
            r.feedback
                .as_ref()
                .map(|f| (r.skill.clone(), describe::target(&r.args), f.clone()))
        }) {
            self.nav = Some(Nav {
                skill: feedback.0,
                target: feedback.1,
                feedback: feedback.2,
                status: SkillStatus::Feedback,
            });
        }
        let shown_before = self.selected_approval().map(|a| a.approval_id.clone());
        for a in &snap.approvals {
            if !self.seen_approvals.contains(&a.approval_id) {
                self.seen_approvals.push(a.approval_id.clone());
                // The card shows, but the keyboard stays where it was.
                self.prompt.hidden = false;
                self.guard();
                self.forecasts
                    .insert(a.approval_id.clone(), forecast(&self.world, &snap, &a.op));
            }
        }
        self.forecasts
            .retain(|id, _| snap.approvals.iter().any(|a| &a.approval_id == id));
        if snap.estop != self.snap.estop {
            self.estop_sent = snap.estop;
        }
        self.snap = snap;
        // Keep the prompt's stage only while its approval is still pending.
        let still = self.prompt.approval_id.as_ref().and_then(|id| {
            self.snap
                .approvals
                .iter()
                .position(|a| &a.approval_id == id)
        });
        if let Some(i) = still {
            self.prompt.selected = i;
        } else {
            self.prompt.approval_id = None;
            self.prompt.stage = Stage::View;
            // The card keeps showing the approval it showed, wherever it moved.
            self.prompt.selected = shown_before
                .as_ref()
                .and_then(|id| {
                    self.snap
                        .approvals
                        .iter()
                        .position(|a| &a.approval_id == id)
                })
                .unwrap_or(self.prompt.selected)
                .min(self.snap.approvals.len().saturating_sub(1));
        }
        if self.selected_approval().map(|a| &a.approval_id) != shown_before.as_ref() {
            self.guard();
        }
        if self.snap.approvals.is_empty() {
            self.prompt.focused = false;
        }
    }

    /// Folds one event from the core into the console: the event list, the
    /// timeline, the panels it feeds.
    fn apply_event(&mut self, event: Event) {
        let time = event.time;
        self.log_event(&event);
        let text = describe::text(&event.kind);
        match event.kind {
            EventKind::Snapshot { snapshot } => self.set_snapshot(*snapshot),
            EventKind::Mode { .. } => self.mode_why = Some(Timed { time, item: text }),
            EventKind::Activity { .. } => self.activity_why = Some(Timed { time, item: text }),
            kind @ (EventKind::Intent { .. }
            | EventKind::Understanding { .. }
            | EventKind::Decision { .. }
            | EventKind::Guardrail { .. }) => {
                if let Some(step) = timeline_step(kind) {
                    self.push_step(time, step);
                }
            }
            EventKind::Approval {
                approval_id,
                status,
                reason,
                ..
            } => self.approval_changed(time, approval_id, status, reason),
            EventKind::Speech { text, track, .. } => push_capped(
                &mut self.speech,
                Timed {
                    time,
                    item: (track, text),
                },
            ),
            EventKind::Skill {
                skill,
                status,
                args,
                feedback,
                ..
            } => self.follow_nav(&skill, status, &args, feedback),
            EventKind::Telemetry { battery_pct, .. } => {
                if self.battery.back().is_none_or(|(t, _)| time > *t) {
                    self.battery.push_back((time, battery_pct));
                }
            }
            EventKind::Error { .. } => self.notice = Some((Level::Error, text)),
            EventKind::Token { text, .. } => self.push_tokens(&text),
            EventKind::Device { device, .. } => self.set_device(device, text),
            EventKind::Memory { .. } => push_capped(&mut self.memory, Timed { time, item: text }),
            EventKind::Fault { .. }
            | EventKind::Task { .. }
            | EventKind::Log { .. }
            | EventKind::Alert { .. }
            | EventKind::Run { .. }
            | EventKind::Update { .. }
            | EventKind::LlmCall(_) => {}
        }
    }

    /// Adds the event's line to the event list, if it has one there.
    fn log_event(&mut self, event: &Event) {
        // Where a command that did this came from, when it was not this
        // console: ` ← web: ws#3 127.0.0.1:51234`.
        let from = event
            .origin
            .as_ref()
            .filter(|o| o.door != Door::Console)
            .map_or_else(String::new, |o| format!(" ← {o}"));
        if let Some(level) = log_level(&event.kind, !from.is_empty()) {
            let line = format!("{}{from}", describe::line(&event.kind));
            self.push_log(event.time, level, line);
        }
    }

    /// An approval changed: on the timeline, and a refused edit shown where
    /// it was made (the card's editor, or the hint line for `/edit`).
    fn approval_changed(
        &mut self,
        time: f64,
        approval_id: String,
        status: ApprovalStatus,
        reason: String,
    ) {
        if status == ApprovalStatus::EditRefused {
            if self.prompt.approval_id.as_deref() == Some(approval_id.as_str())
                && let Stage::Edit { error, sent, .. } = &mut self.prompt.stage
            {
                *error = Some(reason.clone());
                *sent = false;
            } else {
                // An edit sent with /edit: the card is not editing it.
                self.notice = Some((
                    Level::Error,
                    format!("edit of {approval_id} refused: {reason}"),
                ));
            }
        }
        self.push_step(
            time,
            Step::Approval {
                id: approval_id,
                status,
                reason,
            },
        );
    }

    /// Appends streamed model text, keeping the last [`TOKEN_CAP`] bytes
    /// (cut at a character boundary).
    fn push_tokens(&mut self, text: &str) {
        self.tokens.push_str(text);
        if self.tokens.len() > TOKEN_CAP {
            let cut = self.tokens.len() - TOKEN_CAP;
            let at = (cut..self.tokens.len())
                .find(|i| self.tokens.is_char_boundary(*i))
                .unwrap_or(0);
            self.tokens.replace_range(..at, "");
        }
    }

    /// Sets what `device` last said, adding the device if it is new.
    fn set_device(&mut self, device: String, text: String) {
        match self.devices.iter_mut().find(|(d, _)| *d == device) {
            Some(slot) => slot.1 = text,
            None => self.devices.push((device, text)),
        }
    }

    /// Follows the running navigation (its target and progress) for the
    /// status panel.
    fn follow_nav(
        &mut self,
        skill: &str,
        status: SkillStatus,
        args: &Value,
        feedback: Option<NavFeedback>,
    ) {
        if let Some(f) = feedback.or_else(|| {
            self.nav
                .as_ref()
                .filter(|n| n.skill == skill)
                .map(|n| n.feedback.clone())
        }) && matches!(skill, "navigate_to" | "dock")
        {
            self.nav = Some(Nav {
                skill: skill.to_string(),
                target: describe::target(args),
                feedback: f,
                status,
            });
        }
    }

    fn push_step(&mut self, time: f64, step: Step) {
        push_capped(&mut self.timeline, Timed { time, item: step });
    }

    fn push_log(&mut self, time: f64, level: Level, text: String) {
        push_capped(
            &mut self.log,
            Timed {
                time,
                item: (level, text),
            },
        );
    }

    /// Battery change, percent per sim minute, over the recent window.
    pub fn battery_trend(&self) -> Option<f64> {
        let (t0, p0) = *self.battery.front()?;
        let (t1, p1) = *self.battery.back()?;
        (t1 - t0 >= 2.0).then(|| (p1 - p0) / (t1 - t0) * 60.0)
    }
}

fn push_capped<T>(feed: &mut VecDeque<T>, item: T) {
    if feed.len() >= FEED_CAP {
        feed.pop_front();
    }
    feed.push_back(item);
}

/// The timeline line of an utterance understood, a decision or a guardrail
/// verdict; `None` for any other event.
fn timeline_step(kind: EventKind) -> Option<Step> {
    Some(match kind {
        EventKind::Intent {
            utterance,
            intent,
            processed_locally,
            ..
        } => Step::Heard {
            utterance,
            intent,
            local: processed_locally,
        },
        EventKind::Understanding { trace, .. } => Step::Understood {
            by: trace.by.map(|u| u.as_str().to_string()),
            intent: trace.reading.intent,
            passed: trace
                .rows
                .iter()
                .filter(|r| r.outcome != robobrain_core::protocol::Outcome::Took)
                .map(robobrain_core::protocol::RowTrace::text)
                .collect(),
        },
        EventKind::Decision {
            task_id,
            iteration,
            decision_type,
            reason,
            brain,
            ..
        } => Step::Decided {
            task_id,
            iteration,
            decision: decision_type,
            reason,
            brain,
        },
        EventKind::Guardrail {
            op,
            verdict,
            reason,
            ..
        } => Step::Judged {
            op: describe::op(&op),
            verdict,
            reason,
        },
        _ => return None,
    })
}

/// The level of an event's line in the event list, or `None` for events
/// shown elsewhere (the timeline, the panels) or not at all. What was
/// heard and answered is on the timeline; the list names it too when
/// another door (`remote`) did it.
fn log_level(kind: &EventKind, remote: bool) -> Option<Level> {
    Some(match kind {
        EventKind::Intent { .. } | EventKind::Approval { .. } if remote => Level::Info,
        EventKind::Task { task, .. } => match task.status {
            TaskStatus::Aborted | TaskStatus::WaitingHuman => Level::Warn,
            _ => Level::Info,
        },
        EventKind::Skill { status, .. } => match status {
            SkillStatus::Feedback => return None,
            SkillStatus::Failed => Level::Error,
            SkillStatus::Cancelled => Level::Warn,
            SkillStatus::Dispatched | SkillStatus::Succeeded => Level::Info,
        },
        EventKind::Log { level, .. } if level == "warn" => Level::Warn,
        EventKind::Alert { incident } if incident.acknowledged_by.is_none() => Level::Warn,
        EventKind::Fault { .. } => Level::Warn,
        EventKind::Error { .. } => Level::Error,
        EventKind::Mode { .. }
        | EventKind::Activity { .. }
        | EventKind::Log { .. }
        | EventKind::Alert { .. }
        | EventKind::Run { .. }
        | EventKind::LlmCall(_) => Level::Info,
        _ => return None,
    })
}

/// A task status in words.
pub fn status_words(s: TaskStatus) -> &'static str {
    match s {
        TaskStatus::Queued => "queued",
        TaskStatus::Running => "running",
        TaskStatus::Preempted => "preempted",
        TaskStatus::Paused => "paused",
        TaskStatus::WaitingHuman => "waiting for you",
        TaskStatus::Succeeded => "succeeded",
        TaskStatus::Aborted => "aborted",
        TaskStatus::Cancelled => "cancelled",
    }
}
