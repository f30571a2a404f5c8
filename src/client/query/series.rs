//! The query side's other reads: `series` (the label sets a selector
//! matches) and range metric queries (a matrix: each series' values over
//! the range), as logcli has them.

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{sample, Labels, QueryClient, ResultData, Sample};
use crate::client::http::{self, HttpError};

/// One series of a matrix: its labels and its samples, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct JsonSeries {
    #[serde(default)]
    metric: Labels,
    values: Vec<(serde_json::Value, serde_json::Value)>,
}

impl QueryClient {
    /// The label sets of the streams `selector` matches with entries in `[start, end)`.
    pub async fn series(
        &self,
        selector: &str,
        start: i64,
        end: i64,
        cancel: &CancellationToken,
    ) -> Result<Vec<Labels>, HttpError> {
        let params = [("match[]", selector.to_string()), ("start", start.to_string()), ("end", end.to_string())];
        self.retrying(cancel, || self.get(&["series"], &params)).await
    }

    /// A metric query over `[start, end]` every `step` ns: a matrix.
    pub async fn range_matrix(
        &self,
        query: &str,
        (start, end, step): (i64, i64, i64),
        cancel: &CancellationToken,
    ) -> Result<Vec<Series>, HttpError> {
        let step_secs = format!("{}", step as f64 / 1e9);
        let params =
            [("query", query.to_string()), ("start", start.to_string()), ("end", end.to_string()), ("step", step_secs)];
        let data: ResultData = self.retrying(cancel, || self.get(&["query_range"], &params)).await?;
        let decode = |message: String| HttpError::Decode { url: http::redact_url(&self.base), message };
        if data.result_type.as_deref() != Some("matrix") {
            return Err(decode(format!("expected a matrix, got resultType {:?}", data.result_type)));
        }
        let list: Vec<JsonSeries> = serde_json::from_value(data.result).map_err(|e| decode(e.to_string()))?;
        list.into_iter()
            .map(|s| {
                let samples = s
                    .values
                    .iter()
                    .map(|(t, v)| sample(s.metric.clone(), t, v).ok_or_else(|| decode("bad sample".into())))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Series { labels: s.metric, samples })
            })
            .collect()
    }
}
