//! The home tools (seed 001 §3.1) as skills in the one registry: reads
//! (`devices.list` / `search` / `get` / `get_state` / `snapshot`,
//! `actions.get_recent`), writes (`devices.invoke`, `actions.batch_invoke`,
//! `scenes.run`) and dialogue (`dialog.request_confirmation`,
//! `dialog.ask_clarifying_question`). Each carries `main_type`, `sub_type`
//! and a risk level; the policy raises a write's risk further from the
//! device model (`crate::policy::home_reason`). A started goal runs through
//! [`super::Home::call_tool`], which checks, executes and audits; the goal id
//! is the write's request id, so a goal replayed after a resume is refused
//! by the device layer rather than applied twice.

use serde_json::{Value, json};

use super::{HomeHandle, Ids, lock};
use crate::protocol::SpeechTrack;
use crate::skills::{
    MainType, Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType,
};

fn device_arg() -> Value {
    json!({"type": "string", "minLength": 1, "description": "the device's id"})
}

fn ids_props(props: &mut serde_json::Map<String, Value>) {
    for key in ["plan_id", "step_id", "request_id"] {
        props.insert(key.into(), json!({"type": "string", "minLength": 1}));
    }
}

fn object(mut props: serde_json::Map<String, Value>, required: &[&str], write: bool) -> Value {
    if write {
        ids_props(&mut props);
    }
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false
    })
}

fn props(pairs: &[(&str, Value)]) -> serde_json::Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), v.clone()))
        .collect()
}

fn call_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "device": device_arg(),
            "action": {"type": "string", "minLength": 1, "description": "a capability of the device"},
            "args": {"type": "object", "description": "the capability's arguments"}
        },
        "required": ["device", "action"],
        "additionalProperties": false
    })
}

/// Every home tool's spec: name, description, args schema, main/sub type, risk.
pub fn specs() -> Vec<SkillSpec> {
    let mut all = device_reads();
    all.extend(device_writes());
    all.push(recent_spec());
    all.push(scene_spec());
    all.extend(dialog_specs());
    all
}

/// The device reads: list, search, get, get_state, snapshot.
fn device_reads() -> Vec<SkillSpec> {
    let room = json!({"type": "string", "description": "a room's id or name"});
    let read = SubType::Query;
    let p = props;
    vec![
        spec(
            "devices.list",
            "List the home's devices (optionally in one room)",
            object(p(&[("room", room.clone())]), &[], false),
            read,
            Risk::Read,
        ),
        spec(
            "devices.search",
            "Search devices by a word in their names, a room or a kind",
            object(
                p(&[
                    ("query", json!({"type": "string"})),
                    ("room", room.clone()),
                    ("kind", json!({"type": "string"})),
                ]),
                &[],
                false,
            ),
            read,
            Risk::Read,
        ),
        spec(
            "devices.get",
            "Get one device: its room, kind, capabilities and state",
            object(p(&[("device", device_arg())]), &["device"], false),
            read,
            Risk::Read,
        ),
        spec(
            "devices.get_state",
            "Get the state of #{device}",
            object(p(&[("device", device_arg())]), &["device"], false),
            read,
            Risk::Read,
        ),
        spec(
            "devices.snapshot",
            "Get the state of every device (optionally in one room)",
            object(p(&[("room", room)]), &[], false),
            read,
            Risk::Read,
        ),
    ]
}

/// The device writes: one call, or several as one plan.
fn device_writes() -> Vec<SkillSpec> {
    let control = SubType::Control;
    vec![
        spec(
            "devices.invoke",
            "Carry out #{action} on #{device}",
            {
                let mut s = call_schema();
                if let Some(m) = s.get_mut("properties").and_then(Value::as_object_mut) {
                    ids_props(m);
                }
                s
            },
            control,
            Risk::LowWrite,
        ),
        spec(
            "actions.batch_invoke",
            "Carry out several device actions as one plan",
            object(
                props(&[(
                    "calls",
                    json!({"type": "array", "minItems": 1, "items": call_schema()}),
                )]),
                &["calls"],
                true,
            ),
            control,
            Risk::HighWrite,
        ),
    ]
}

/// `actions.get_recent`: the most recent device actions.
fn recent_spec() -> SkillSpec {
    spec(
        "actions.get_recent",
        "List the most recent device actions and their results",
        object(
            props(&[(
                "limit",
                json!({"type": "integer", "minimum": 1, "maximum": 100}),
            )]),
            &[],
            false,
        ),
        SubType::Query,
        Risk::Read,
    )
}

/// `scenes.run`: a scene's calls as one plan.
fn scene_spec() -> SkillSpec {
    spec(
        "scenes.run",
        "Run the scene #{scene}",
        object(
            props(&[("scene", json!({"type": "string", "minLength": 1}))]),
            &["scene"],
            true,
        ),
        SubType::Control,
        Risk::HighWrite,
    )
}

/// The dialogue tools: a confirmation, a clarifying question.
fn dialog_specs() -> Vec<SkillSpec> {
    let question = || json!({"type": "string", "minLength": 1});
    vec![
        spec(
            "dialog.request_confirmation",
            "Present a plan to the user for confirmation",
            object(
                props(&[("question", question()), ("plan", json!({}))]),
                &["question"],
                false,
            ),
            SubType::Query,
            Risk::Read,
        ),
        spec(
            "dialog.ask_clarifying_question",
            "Ask the user which of several candidates they mean",
            object(
                props(&[
                    ("question", question()),
                    (
                        "candidates",
                        json!({"type": "array", "items": {"type": "string"}}),
                    ),
                ]),
                &["question"],
                false,
            ),
            SubType::Query,
            Risk::Read,
        ),
    ]
}

fn spec(
    name: &str,
    description: &str,
    args_schema: Value,
    sub_type: SubType,
    risk: Risk,
) -> SkillSpec {
    let templates = super::templates::generate(description, &args_schema);
    SkillSpec {
        name: name.into(),
        description: description.replace("#{", "").replace('}', ""),
        args_schema,
        main_type: MainType::Local,
        sub_type,
        risk,
        resources: Vec::new(),
        shared_resources: Vec::new(),
        preemptible: true,
        cancel_supported: false,
        timeout_s: 10.0,
        success_criteria: if sub_type == SubType::Control {
            "every device call was applied".into()
        } else {
            "the facts were returned".into()
        },
        error_map: [
            ("offline", Recovery::AskHuman),
            ("not_capable", Recovery::AskHuman),
            ("invalid_args", Recovery::AskHuman),
            ("unknown_device", Recovery::AskHuman),
            ("duplicate_request", Recovery::Skip),
            ("backend", Recovery::Retry),
        ]
        .into_iter()
        .map(|(c, r)| (c.to_string(), r))
        .collect(),
        reply_templates: templates,
        version: "1.0".into(),
        dependencies: Vec::new(),
        capabilities: vec!["home".into()],
    }
}

/// One home tool over the shared home.
pub struct HomeTool {
    spec: SkillSpec,
    home: HomeHandle,
}

/// Every home tool as a skill over `home`.
pub fn skills(home: &HomeHandle) -> Vec<Box<dyn Skill>> {
    specs()
        .into_iter()
        .map(|spec| {
            Box::new(HomeTool {
                spec,
                home: home.clone(),
            }) as Box<dyn Skill>
        })
        .collect()
}

impl Skill for HomeTool {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let mut home = lock(&self.home);
        let ids = Ids {
            plan_id: args
                .get("plan_id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("plan-{goal_id}"), str::to_string),
            step_id: args
                .get("step_id")
                .and_then(Value::as_str)
                .unwrap_or("1")
                .to_string(),
            request_id: goal_id.to_string(),
        };
        match home.call_tool(&self.spec.name, args, &ids) {
            Ok(result) => {
                if self.spec.sub_type == SubType::Control {
                    // A confirmed plan ran: say what happened, failures included.
                    ctx.speech.push((
                        super::summary::outcome_line(&home, &result, home.session.lang),
                        SpeechTrack::Answer,
                    ));
                }
                Ok(Started::Done(result))
            }
            Err(e) => Ok(Started::Failed {
                code: e.code().to_string(),
                message: e.to_string(),
            }),
        }
    }
}
