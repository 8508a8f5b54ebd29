# Honeycomb for agent loops found by otel-semloop: a derived column, three saved queries, a
# trigger and a board. Apply with a Honeycomb configuration key in HONEYCOMB_API_KEY:
#
#   terraform init && terraform apply -var dataset=my-agent-service -var alert_email=oncall@example.com
#
# Checked offline only (the test suite parses this file with python-hcl2); not applied here.

terraform {
  required_providers {
    honeycombio = {
      source  = "honeycombio/honeycombio"
      version = ">= 0.30.0"
    }
  }
}

provider "honeycombio" {
  # reads HONEYCOMB_API_KEY (a configuration key, not the ingest key the exporter uses)
}

variable "dataset" {
  description = "The dataset your agent's traces land in (its service.name)."
  type        = string
}

variable "alert_email" {
  description = "Who hears about loops."
  type        = string
}

# 1 for a root span scored loop or suspected, 0 for any other scored root: AVG is the flag rate.
resource "honeycombio_derived_column" "semloop_flagged" {
  alias       = "semloop.flagged"
  description = "1 when otel-semloop labelled the trace loop or suspected, 0 when scored otherwise"
  dataset     = var.dataset
  expression  = "IF(EXISTS($semloop.label), IF(IN($semloop.label, \"loop\", \"suspected\"), 1, 0))"
}

data "honeycombio_query_specification" "loops_by_agent" {
  calculation {
    op = "COUNT"
  }
  filter {
    column = "semloop.loop.detected"
    op     = "="
    value  = "true"
  }
  breakdowns = ["service.name", "name"]
  time_range = 86400
}

data "honeycombio_query_specification" "flag_rate" {
  calculation {
    op     = "AVG"
    column = honeycombio_derived_column.semloop_flagged.alias
  }
  filter {
    column = "semloop.label"
    op     = "exists"
  }
  breakdowns = ["service.name"]
  time_range = 86400
}

data "honeycombio_query_specification" "score_heatmap" {
  calculation {
    op     = "HEATMAP"
    column = "semloop.score"
  }
  filter {
    column = "semloop.score"
    op     = "exists"
  }
  time_range = 86400
}

# The trigger's query: loops in the last 15 minutes, checked every 5.
data "honeycombio_query_specification" "recent_loops" {
  calculation {
    op = "COUNT"
  }
  filter {
    column = "semloop.loop.detected"
    op     = "="
    value  = "true"
  }
  time_range = 900
}

resource "honeycombio_query" "loops_by_agent" {
  dataset    = var.dataset
  query_json = data.honeycombio_query_specification.loops_by_agent.json
}

resource "honeycombio_query" "flag_rate" {
  dataset    = var.dataset
  query_json = data.honeycombio_query_specification.flag_rate.json
}

resource "honeycombio_query" "score_heatmap" {
  dataset    = var.dataset
  query_json = data.honeycombio_query_specification.score_heatmap.json
}

resource "honeycombio_trigger" "agent_loops" {
  name        = "Agent stuck in a loop"
  description = "otel-semloop flagged at least one agent trace (semloop.loop.detected = true) in 15 minutes"
  dataset     = var.dataset
  query_json  = data.honeycombio_query_specification.recent_loops.json
  frequency   = 300
  alert_type  = "on_change"

  threshold {
    op    = ">"
    value = 0
  }

  recipient {
    type   = "email"
    target = var.alert_email
  }
}

resource "honeycombio_flexible_board" "agent_loops" {
  name        = "Agent loops (otel-semloop)"
  description = "Where agents loop, how often, and how the semloop score is spread"

  panel {
    type = "query"
    query_panel {
      query_id    = honeycombio_query.loops_by_agent.id
      query_style = "graph"
    }
  }

  panel {
    type = "query"
    query_panel {
      query_id    = honeycombio_query.flag_rate.id
      query_style = "graph"
    }
  }

  panel {
    type = "query"
    query_panel {
      query_id    = honeycombio_query.score_heatmap.id
      query_style = "graph"
    }
  }
}
