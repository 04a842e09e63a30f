//! Chat prompts rendered from the model's `tokenizer.chat_template` with minijinja.

use crate::error::EngineError;
use minijinja::{context, Environment, Error, ErrorKind};
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Self {
        Message { role: role.to_string(), content: content.to_string() }
    }
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

fn raise_exception(msg: String) -> Result<String, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, msg))
}

impl ChatTemplate {
    /// Compile `source`; `bos`/`eos` are the token strings templates may reference.
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<Self, EngineError> {
        let mut env = Environment::new();
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned("chat", source.to_string()).map_err(|e| EngineError::Template(e.to_string()))?;
        Ok(ChatTemplate { env, bos: bos.to_string(), eos: eos.to_string() })
    }

    /// The prompt text for `messages`, ending with the assistant's turn opened.
    pub fn render(&self, messages: &[Message]) -> Result<String, EngineError> {
        let tmpl = self.env.get_template("chat").map_err(|e| EngineError::Template(e.to_string()))?;
        tmpl.render(context! { messages => messages, add_generation_prompt => true, bos_token => &self.bos, eos_token => &self.eos })
            .map_err(|e| EngineError::Template(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_template_renders_turns_and_generation_prompt() {
        let src = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
        let t = ChatTemplate::new(src, "", "").unwrap();
        let out = t.render(&[Message::new("user", "Hi")]).unwrap();
        assert_eq!(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    }

    #[test]
    fn template_errors_are_reported_not_panics() {
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
        let t = ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        assert!(t.render(&[]).unwrap_err().to_string().contains("no system role"));
    }
}
