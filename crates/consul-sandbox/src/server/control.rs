//! The sandbox's own `/v1/sandbox/*` endpoints: statistics and fault
//! control.
//!
//! This module must NOT serve the Consul API: those requests go through the
//! normal pipeline in the parent module.

use super::*;

/// The sandbox's own endpoints: stats and fault control.
pub(super) async fn control(shared: &Shared, route: &Route, req: Request<Incoming>) -> Resp {
    let result: Result<Resp, ApiError> = async {
        match (route, req.method().clone()) {
            (Route::SandboxStats, Method::GET) => {
                let stats = serde_json::to_value(shared.stats()).unwrap_or(Value::Null);
                Ok(json_resp(200, &stats, false))
            }
            (Route::SandboxFaults, Method::POST) => {
                let b = body(shared, req).await?;
                match parse_request(&b).map_err(ApiError::BadRequest)? {
                    FaultRequest::Refuse(d) => {
                        shared.faults.refuse_connections_for(d);
                        Ok(json_resp(
                            200,
                            &json!({ "refusing_ms": d.as_millis() as u64 }),
                            false,
                        ))
                    }
                    FaultRequest::Leaderless(on) => {
                        shared.faults.set_leaderless(on);
                        Ok(json_resp(200, &json!({ "leaderless": on }), false))
                    }
                    FaultRequest::Rule(rule) => {
                        let id = shared.faults.add(rule);
                        Ok(json_resp(200, &json!({ "id": id }), false))
                    }
                }
            }
            (Route::SandboxFaults, Method::DELETE) => {
                shared.faults.clear();
                Ok(json_resp(200, &json!(true), false))
            }
            (r, m) => Err(ensure_method(r, &m).err().unwrap_or(ApiError::NotFound)),
        }
    }
    .await;
    match result {
        Ok(r) => r,
        Err(e) => error_resp(&e),
    }
}
