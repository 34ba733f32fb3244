//! Action tokens: what lets a notification's buttons answer one question without the owner's
//! token. Each is random, minted with the question's push, kept only as a hash, valid for
//! [`ACTION_TOKEN_TTL`], good for one answer to that one question, and only with one of the
//! answers the notification offered.
//!
//! They live in memory: a restart forgets them, and the service worker then opens the
//! question's decision screen instead (the question itself survives and stays answerable).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::locks::Unpoisoned;
use crate::protocol::{Answers, ChatId, QuestionId};

/// How long a notification's buttons can answer.
pub const ACTION_TOKEN_TTL: Duration = Duration::from_secs(3600);
/// Tokens kept at once (spent and expired ones are dropped first).
pub const MAX_ACTION_TOKENS: usize = 256;

#[derive(Debug)]
struct Grant {
    chat_id: ChatId,
    question_id: QuestionId,
    /// `(action, answers)` offered by the notification.
    choices: Vec<(String, Answers)>,
    expires: Instant,
    spent: bool,
}

/// What a redeemed token answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Redeemed {
    pub chat_id: ChatId,
    pub question_id: QuestionId,
    pub answers: Answers,
}

/// The live action tokens, by hash.
#[derive(Debug, Default)]
pub struct ActionTokens(Mutex<HashMap<[u8; 32], Grant>>);

impl ActionTokens {
    /// Mints a token for `question_id` of `chat_id` with its `(action, answers)` choices.
    pub fn mint(&self, chat_id: &ChatId, question_id: &QuestionId, choices: Vec<(String, Answers)>) -> Result<String> {
        let (token, hash) = super::crypto::new_secret()?;
        let now = Instant::now();
        let mut grants = self.0.locked();
        if grants.len() >= MAX_ACTION_TOKENS {
            grants.retain(|_, g| !g.spent && g.expires > now);
            if grants.len() >= MAX_ACTION_TOKENS
                && let Some(oldest) = grants.iter().min_by_key(|(_, g)| g.expires).map(|(k, _)| *k)
            {
                grants.remove(&oldest);
            }
        }
        grants.insert(
            hash,
            Grant {
                chat_id: chat_id.clone(),
                question_id: question_id.clone(),
                choices,
                expires: now + ACTION_TOKEN_TTL,
                spent: false,
            },
        );
        Ok(token)
    }

    /// Spends `token` on `action` for `question_id`. Unknown token or another question: 401;
    /// spent or expired: 410; an action it did not offer: 400. Only success spends it.
    pub fn redeem(&self, token: &str, question_id: &str, action: &str) -> Result<Redeemed> {
        let hash = super::crypto::secret_hash(token);
        let mut grants = self.0.locked();
        let Some(grant) = grants.get_mut(&hash) else {
            return Err(Error::unauthorized("invalid_action_token", "This notification can no longer answer."));
        };
        if grant.question_id.as_str() != question_id {
            return Err(Error::unauthorized("invalid_action_token", "This token answers another question."));
        }
        if grant.spent {
            return Err(Error::gone("action_token_used", "This notification already answered."));
        }
        if grant.expires <= Instant::now() {
            return Err(Error::gone("action_token_expired", "This notification expired; open the app to answer."));
        }
        let Some((_, answers)) = grant.choices.iter().find(|(a, _)| a == action) else {
            return Err(Error::bad_request("invalid_action", "The notification offered no such answer."));
        };
        let redeemed = Redeemed {
            chat_id: grant.chat_id.clone(),
            question_id: grant.question_id.clone(),
            answers: answers.clone(),
        };
        grant.spent = true;
        Ok(redeemed)
    }

    /// Gives a spent token back (its answer could not be delivered, e.g. the turn was busy).
    pub fn restore(&self, token: &str) {
        if let Some(grant) = self.0.locked().get_mut(&super::crypto::secret_hash(token)) {
            grant.spent = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::{ApprovalAnswers, Decision};

    use super::*;

    fn verdict(decision: Decision) -> Answers {
        Answers::Approval(ApprovalAnswers { decision, reason: None, plan: None })
    }

    fn tokens() -> (ActionTokens, String) {
        let tokens = ActionTokens::default();
        let token = tokens
            .mint(
                &ChatId::from("c1"),
                &QuestionId::from("q-1"),
                vec![("allow".into(), verdict(Decision::Allow)), ("deny".into(), verdict(Decision::Deny))],
            )
            .expect("mint");
        (tokens, token)
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_answers_its_question_once() {
        let (tokens, token) = tokens();
        assert_eq!(tokens.redeem(&token, "q-2", "allow").expect_err("other").status().as_u16(), 401);
        assert_eq!(tokens.redeem("forged", "q-1", "allow").expect_err("forged").status().as_u16(), 401);
        assert_eq!(tokens.redeem(&token, "q-1", "maybe").expect_err("not offered").status().as_u16(), 400);
        let redeemed = tokens.redeem(&token, "q-1", "deny").expect("first use");
        assert_eq!(
            redeemed,
            Redeemed { chat_id: "c1".into(), question_id: "q-1".into(), answers: verdict(Decision::Deny) }
        );
        assert_eq!(tokens.redeem(&token, "q-1", "deny").expect_err("replay").code(), "action_token_used");
        tokens.restore(&token);
        assert!(tokens.redeem(&token, "q-1", "allow").is_ok(), "a restored token answers again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_expires() {
        let (tokens, token) = tokens();
        tokio::time::advance(ACTION_TOKEN_TTL).await;
        let err = tokens.redeem(&token, "q-1", "allow").expect_err("expired");
        assert_eq!((err.status().as_u16(), err.code()), (410, "action_token_expired"));
    }
}
